import {
  asProblem,
  badRequest,
  type Config,
  type Logger,
  type Principal,
  type RouteDefinition,
} from '@tokenvault/platform';
import { createSandboxPool, type SandboxPool } from '@tokenvault/sandbox';
import { headersAndBody, rawAndTokens } from './answers.ts';
import { guestProblem } from './run-problems.ts';
import {
  principalFromData,
  problemData,
  type CodeRunOutcome,
  type CodeRunRequest,
  type SeenDecisions,
} from './run-request.ts';
import { ServiceClient, serviceMethodNames, type TokensAnswered } from './service-client.ts';

/** What `svc` read in a run: as which application, and each token as it was answered. */
interface SvcReads {
  application?: Principal;
  tokens: TokensAnswered;
}

export type CodeRunnerConfig = Pick<
  Config,
  | 'REACTOR_TIMEOUT_MS'
  | 'REACTOR_CPU_TIME_MS'
  | 'REACTOR_MEMORY_MB'
  | 'REACTOR_CONCURRENCY'
  | 'REACTOR_PROCESSES'
  | 'REACTOR_MAX_OUTPUT_BYTES'
  | 'REACTOR_MAX_SERVICE_CALLS'
>;

/** The principal of a tenant's application (what a run acts as), or undefined when it is gone. */
export type ApplicationPrincipal = (
  tenantId: string,
  applicationId: string,
) => Promise<Principal | undefined>;

export interface CodeRunnerOptions {
  config: CodeRunnerConfig;
  /** The service's routes: `svc` and `tokenize` call them in-process. */
  routes: readonly RouteDefinition[];
  applicationPrincipal: ApplicationPrincipal;
  logger: Logger;
}

/**
 * The bridge to the isolated-vm sandbox (child processes of its own): runs a request's code as
 * its application (`svc` calls the service's routes in-process as it), and makes what the code
 * answered the run's outcome (`answers`). The code's own errors, and a run request that can no
 * longer be met (its application gone), are outcomes; anything else is thrown.
 */
export class CodeRunner {
  private readonly options: CodeRunnerOptions;
  private readonly sandbox: SandboxPool;
  private readonly services: ServiceClient;

  private constructor(options: CodeRunnerOptions, sandbox: SandboxPool) {
    this.options = options;
    this.sandbox = sandbox;
    this.services = new ServiceClient(options.routes);
  }

  /** Starts the sandbox's processes, with the limits of every run. */
  static async start(options: CodeRunnerOptions): Promise<CodeRunner> {
    const { config } = options;
    const sandbox = await createSandboxPool({
      limits: {
        memoryMb: config.REACTOR_MEMORY_MB,
        cpuTimeMs: config.REACTOR_CPU_TIME_MS,
        wallTimeMs: config.REACTOR_TIMEOUT_MS,
        maxOutputBytes: config.REACTOR_MAX_OUTPUT_BYTES,
        maxServiceCalls: config.REACTOR_MAX_SERVICE_CALLS,
      },
      processes: config.REACTOR_PROCESSES,
      // Every run the worker takes has an isolate slot: none waits inside the pool.
      concurrencyPerProcess: Math.ceil(config.REACTOR_CONCURRENCY / config.REACTOR_PROCESSES),
      logger: options.logger,
    });
    return new CodeRunner(options, sandbox);
  }

  /** The run's outcome, with the tokens whose data it saw (its args', and what `svc` read). */
  async run(request: CodeRunRequest): Promise<CodeRunOutcome> {
    const tokensRead = new Set(request.token_ids ?? []);
    const svcReads: SvcReads = { tokens: new Map() };
    const outcome = await this.runCode(request, tokensRead, svcReads);
    if (tokensRead.size === 0) return outcome;
    const args = request.token_transforms;
    const { application } = svcReads;
    const svc: SeenDecisions['svc'] =
      application && svcReads.tokens.size > 0
        ? {
            application_id: application.actorId,
            permissions: [...application.permissions],
            rules: [...application.rules],
            tokens: Object.fromEntries(svcReads.tokens),
          }
        : undefined;
    return {
      ...outcome,
      token_ids: [...tokensRead],
      ...(request.reads_from ? { reads_from: request.reads_from } : {}),
      ...(args || svc ? { seen: { ...(args ? { args } : {}), ...(svc ? { svc } : {}) } } : {}),
    };
  }

  /** The sandbox processes go (runs in flight answer that the sandbox is closed). */
  async close(): Promise<void> {
    await this.sandbox.close();
  }

  private async runCode(
    request: CodeRunRequest,
    tokensRead: Set<string>,
    svcReads: SvcReads,
  ): Promise<CodeRunOutcome> {
    try {
      const caller = principalFromData(request.caller);
      const application = request.application_id
        ? await this.options.applicationPrincipal(caller.tenantId, request.application_id)
        : undefined;
      svcReads.application = application;
      if (request.application_id && !application) {
        throw badRequest('The reactor’s application no longer exists.', undefined, {
          type: 'invalid-reactor-configuration',
        });
      }
      const outcome = await this.sandbox.run(
        {
          code: request.code,
          args: request.args,
          configuration: request.configuration,
          serviceMethods: application ? serviceMethodNames : null,
        },
        (method, args) =>
          this.services.invoke(method, args, application!, request.request_id, tokensRead, svcReads.tokens),
      );
      if (!outcome.ok) return { ok: false, problem: guestProblem(outcome) };
      switch (request.answers) {
        case 'headers-and-body':
          return { ok: true, body: { raw: headersAndBody(outcome.result) } };
        case 'raw-and-tokens': {
          // Tokens are created as the run's application, or else as its caller.
          const creator = application ?? caller;
          const createToken = async (body: Record<string, unknown>) =>
            (await this.services.call('post /tokens', { body }, creator, request.request_id)).body;
          return {
            ok: true,
            body: await rawAndTokens(
              outcome.result,
              createToken,
              this.options.config.REACTOR_MAX_SERVICE_CALLS,
            ),
          };
        }
      }
    } catch (error) {
      // A problem (or a decider's refusal, as the API would answer it) is the run's outcome.
      const problem = asProblem(error);
      if (problem) return { ok: false, problem: problemData(problem) };
      throw error;
    }
  }
}
