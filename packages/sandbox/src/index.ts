export { createSandboxPool } from './pool.ts';
export { checkSyntax, type SyntaxCheck } from './syntax.ts';
export {
  DEFAULT_SANDBOX_LIMITS,
  REACTOR_ERRORS,
  ServiceCallError,
  type ReactorErrorName,
  type SandboxError,
  type SandboxLimits,
  type SandboxLogger,
  type SandboxOutcome,
  type SandboxPool,
  type SandboxPoolOptions,
  type SandboxRun,
  type ServiceCallHandler,
} from './types.ts';
