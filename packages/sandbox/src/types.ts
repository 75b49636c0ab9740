export const REACTOR_ERRORS = {
  BadRequestError: 400,
  InvalidReactorConfigurationError: 400,
  AuthenticationError: 401,
  InvalidPaymentMethodError: 402,
  AuthorizationError: 403,
  RateLimitError: 429,
  ReactorRuntimeError: 500,
  ServiceUnavailableError: 503,
} as const;

export type ReactorErrorName = keyof typeof REACTOR_ERRORS;

export interface SandboxLimits {
  /** The isolate's heap limit (isolated-vm `memoryLimit`, MB, at least 8). */
  memoryMb: number;
  /** CPU time the reactor may use in one run. */
  cpuTimeMs: number;
  /** Total time of one run, awaited promises included. */
  wallTimeMs: number;
  /** UTF-8 size of the JSON result (or error), and of each service call's JSON arguments. */
  maxOutputBytes: number;
  /** Service calls one run may make. */
  maxServiceCalls: number;
}

/**
 * Defaults for a production pool: Basis Theory's published payload cap (1 MB) and detokenization
 * cap (100 per request) bound the output and the service calls.
 */
export const DEFAULT_SANDBOX_LIMITS: Readonly<SandboxLimits> = Object.freeze({
  memoryMb: 128,
  cpuTimeMs: 5_000,
  wallTimeMs: 10_000,
  maxOutputBytes: 1024 * 1024,
  maxServiceCalls: 100,
});

export interface SandboxRun {
  /** `module.exports = async function (req) { … }` */
  code: string;
  /** Plain JSON, copied into the guest as `req.args`. */
  args: unknown;
  /** Plain JSON, copied into the guest as `req.configuration`. */
  configuration: unknown;
  /** null: `req.svc === null`; else `req.svc` exposes these dotted async methods. */
  serviceMethods: readonly string[] | null;
}

export interface SandboxError {
  name: ReactorErrorName;
  status: number;
  message: string;
  errors?: Record<string, string[]>;
}

/**
 * `codeCached`: the run's code was compiled by an earlier run in the same isolate and its script
 * reused (absent when the run did not get as far as compiling). The context is new either way.
 */
export type SandboxOutcome =
  | { ok: true; result: unknown; cpuTimeMs: number; wallTimeMs: number; codeCached?: boolean }
  | { ok: false; error: SandboxError; cpuTimeMs: number; wallTimeMs: number; codeCached?: boolean };

/** Called for each `req.svc.*` call; its JSON-serialisable result is copied into the guest. */
export type ServiceCallHandler = (method: string, args: unknown[]) => Promise<unknown>;

export interface SandboxPool {
  run(run: SandboxRun, onServiceCall: ServiceCallHandler): Promise<SandboxOutcome>;
  close(): Promise<void>;
}

/** pino-compatible subset. */
export interface SandboxLogger {
  warn(details: object, message: string): void;
  error(details: object, message: string): void;
}

export interface SandboxPoolOptions {
  limits: SandboxLimits;
  /** Child processes (default 1). */
  processes?: number;
  /** Runs at once per child, each in its own isolate (default 2). */
  concurrencyPerProcess?: number;
  /** Service calls of one run in flight at once (default 4). */
  serviceCallConcurrency?: number;
  /** Runs after which an isolate is replaced (default 500). */
  maxRunsPerIsolate?: number;
  logger?: SandboxLogger;
}

/**
 * Thrown by a ServiceCallHandler to give the guest a meaningful rejection: the guest sees an
 * Error named BasisTheoryApiError with this message, `status` and `data`. Any other error thrown
 * by the handler reaches the guest as "Service call failed" (status 500), and is logged.
 */
export class ServiceCallError extends Error {
  readonly status: number;
  readonly data: unknown;

  constructor(message: string, status: number, data?: unknown) {
    super(message);
    this.name = 'ServiceCallError';
    this.status = status;
    this.data = data;
  }
}
