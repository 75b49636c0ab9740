export {
  outcomeBody,
  principalData,
  problemFromData,
  type CodeRunOutcome,
  type CodeRunRequest,
  type PrincipalData,
  type ProblemData,
  type RunAnswers,
  type SeenDecisions,
} from './run-request.ts';
export { CodeRunQueue, runHoldMs, type CodeRunStatus, type ResultStillShown } from './run-queue.ts';
export { CodeRunWorker, type CodeRunWorkerOptions } from './run-worker.ts';
export type { ApplicationPrincipal } from './code-runner.ts';
export { checkSyntax, type SyntaxCheck } from '@tokenvault/sandbox';
