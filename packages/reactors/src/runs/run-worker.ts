import { STATUS_CODES } from 'node:http';
import { createWorker, reactorRunQueueName, type Job, type Worker } from '@tokenvault/jobs';
import {
  Problem,
  createRedis,
  failedJobOutcome,
  queueJobsTotal,
  reactorRunDuration,
  reactorRunsTotal,
  type Config,
  type Logger,
  type Pool,
  type Principal,
  type Redis,
  type RouteDefinition,
} from '@tokenvault/platform';
import { principalOfApplication } from '@tokenvault/tenancy';
import type { Vault } from '@tokenvault/vault';
import { createSandboxPool, type SandboxOutcome, type SandboxPool } from '@tokenvault/sandbox';
import {
  principalFromData,
  problemData,
  sealedOutcomeSubject,
  sealedRequestSubject,
  type ProblemData,
  type ReactorRunJob,
  type ReactorRunOutcome,
  type ReactorRunRequest,
  runFailure,
} from './run-messages.ts';
import { isPlainObject } from '@tokenvault/expressions';
import { ServiceClient, serviceMethodNames } from './service-client.ts';
import { replyListPrefix, sendRunReply, type RunReply } from './run-replies.ts';

type RunWorkerConfig = Pick<
  Config,
  | 'REDIS_URL'
  | 'QUEUE_PREFIX'
  | 'REACTOR_TIMEOUT_MS'
  | 'REACTOR_CPU_TIME_MS'
  | 'REACTOR_MEMORY_MB'
  | 'REACTOR_CONCURRENCY'
  | 'REACTOR_PROCESSES'
  | 'REACTOR_MAX_OUTPUT_BYTES'
  | 'REACTOR_MAX_SERVICE_CALLS'
>;

export interface RunWorkerOptions {
  config: RunWorkerConfig;
  vault: Vault;
  ownerPool: Pool;
  /** The service's routes: `svc` and `tokenize` call them in-process. */
  routes: readonly RouteDefinition[];
  logger: Logger;
}

/**
 * The reactor worker pool: takes runs off the BullMQ queue, opens each sealed request, runs the
 * formula's code in the isolated-vm sandbox (child processes of its own), turns `tokenize` into
 * tokens, and returns the outcome sealed. The reactor's own errors are outcomes, not job
 * failures; a job fails only when the run could not be carried out.
 */
export class ReactorRunWorker {
  private readonly worker: Worker<ReactorRunJob, string>;
  private readonly services: ServiceClient;
  /** Where replies go to the gateways waiting on runs. */
  private readonly replies: Redis;

  private readonly options: RunWorkerOptions & { sandbox: SandboxPool };

  private constructor(options: RunWorkerOptions & { sandbox: SandboxPool }) {
    this.options = options;
    this.services = new ServiceClient(options.routes);
    this.replies = createRedis(options.config.REDIS_URL);
    this.replies.on('error', (error) => options.logger.warn({ err: error }, 'reactor run replies error'));
    this.worker = createWorker<ReactorRunJob, string>(
      reactorRunQueueName,
      options.config,
      (job) => this.process(job),
      {
        concurrency: options.config.REACTOR_CONCURRENCY,
        // A run whose worker died is failed, never run again: reactor code may not be idempotent.
        maxStalledCount: 0,
      },
    );
    this.worker.on('completed', () =>
      queueJobsTotal.inc({ queue: reactorRunQueueName, outcome: 'completed' }),
    );
    this.worker.on('failed', (job) =>
      queueJobsTotal.inc({ queue: reactorRunQueueName, outcome: failedJobOutcome(job) }),
    );
    this.worker.on('failed', (job, error) =>
      options.logger.warn({ jobId: job?.id, reason: error.name }, 'reactor run could not be completed'),
    );
    this.worker.on('error', (error) => options.logger.warn({ err: error }, 'reactor worker error'));
  }

  static async start(options: RunWorkerOptions): Promise<ReactorRunWorker> {
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
    const worker = new ReactorRunWorker({ ...options, sandbox });
    void worker.worker
      .run()
      .catch((error: unknown) => options.logger.error({ err: error }, 'reactor worker stopped'));
    return worker;
  }

  /** Runs in flight finish; nothing new is taken; then the sandbox processes go. */
  async close(): Promise<void> {
    await this.worker.close();
    await this.options.sandbox.close();
    await this.replies.quit().catch(() => this.replies.disconnect());
  }

  /**
   * Never fails with the cause: BullMQ would keep its message and stack in Redis in the clear, and
   * a message can quote input. The cause is logged (errors are logged without statement data).
   */
  private async process(job: Job<ReactorRunJob, string>): Promise<string> {
    const { vault, logger } = this.options;
    const runId = job.id!;
    const tenantId = job.data.tenant_id;
    const started = process.hrtime.bigint();
    let outcome: ReactorRunOutcome | undefined;
    try {
      const request = (await vault.decrypt(
        tenantId,
        sealedRequestSubject(runId),
        job.data.sealed_request,
      )) as ReactorRunRequest;
      outcome = await this.run(request);
    } catch (error) {
      logger.error({ err: error, jobId: runId }, 'reactor run could not be carried out');
    }
    // The reactor's error by its name (an SDK class, or a problem's slug); a run that could not
    // be carried out at all: `infrastructure`.
    const label = !outcome ? 'infrastructure' : outcome.ok ? 'ok' : outcomeName(outcome.problem);
    reactorRunsTotal.inc({ outcome: label });
    reactorRunDuration.observe(
      { result: label === 'ok' ? 'ok' : 'error' },
      Number(process.hrtime.bigint() - started) / 1e9,
    );
    let sealedOutcome: string;
    try {
      sealedOutcome = await vault.encrypt(tenantId, sealedOutcomeSubject(runId), outcome ?? runFailure);
    } catch (error) {
      logger.error({ err: error, jobId: runId }, 'reactor run outcome could not be sealed');
      await this.reply(job, { run_id: runId });
      await this.forgetRequest(job);
      throw new Error('the reactor run’s outcome could not be sealed');
    }
    // Before BullMQ records the job as completed: the waiting gateway needs nothing more.
    await this.reply(job, { run_id: runId, sealed_outcome: sealedOutcome });
    await this.forgetRequest(job);
    return sealedOutcome;
  }

  /**
   * A kept (async) job holds its run's detokenized args no longer than the run: its result is
   * all that is read of it later. A sync job is removed as it completes.
   */
  private async forgetRequest(job: Job<ReactorRunJob, string>): Promise<void> {
    if (job.opts.removeOnComplete === true) return;
    await job
      .updateData({ ...job.data, sealed_request: '' })
      .catch((error: unknown) =>
        this.options.logger.warn({ err: error, jobId: job.id }, 'reactor run request could not be dropped'),
      );
  }

  /** Tells the gateway that queued the run (a job without `reply_to` came from an older one). */
  private async reply(job: Job<ReactorRunJob, string>, reply: RunReply): Promise<void> {
    const replyTo = job.data.reply_to;
    if (!replyTo?.startsWith(replyListPrefix(this.options.config.QUEUE_PREFIX))) return;
    try {
      await sendRunReply(this.replies, replyTo, reply);
    } catch (error) {
      // The gateway's wait times out (504); an async run's result is still in its job.
      this.options.logger.warn({ err: error, jobId: job.id }, 'reactor run reply could not be sent');
    }
  }

  /** The run's outcome, with the tokens whose data it saw (its args', and what `svc` read). */
  private async run(request: ReactorRunRequest): Promise<ReactorRunOutcome> {
    const tokensRead = new Set(request.token_ids ?? []);
    const outcome = await this.runCode(request, tokensRead);
    return tokensRead.size > 0 ? { ...outcome, token_ids: [...tokensRead] } : outcome;
  }

  private async runCode(request: ReactorRunRequest, tokensRead: Set<string>): Promise<ReactorRunOutcome> {
    try {
      const caller = principalFromData(request.caller);
      const application = request.application_id
        ? await principalOfApplication(this.options.ownerPool, caller.tenantId, request.application_id)
        : undefined;
      if (request.application_id && !application) {
        throw new Problem(
          400,
          'invalid-reactor-configuration',
          'Bad Request',
          'The reactor’s application no longer exists.',
        );
      }
      const outcome = await this.options.sandbox.run(
        {
          code: request.code,
          args: request.args,
          configuration: request.configuration,
          serviceMethods: application ? serviceMethodNames : null,
        },
        (method, args) => this.services.invoke(method, args, application!, request.request_id, tokensRead),
      );
      if (!outcome.ok) return { ok: false, problem: reactorProblem(outcome) };
      if (request.answers === 'transform')
        return { ok: true, body: { raw: transformAnswer(outcome.result) } };
      return {
        ok: true,
        body: await this.responseOf(outcome.result, application ?? caller, request.request_id),
      };
    } catch (error) {
      if (error instanceof Problem) return { ok: false, problem: problemData(error) };
      throw error;
    }
  }

  /** `{ raw, tokenize }` → `{ raw, tokens }`: each token-create body in tokenize becomes a token. */
  private async responseOf(
    result: unknown,
    creator: Principal,
    requestId: string,
  ): Promise<{ tokens?: unknown; raw?: unknown }> {
    if (result === undefined || result === null) return {};
    if (!isPlainObject(result)) {
      throw reactorRuntimeProblem('The reactor must return an object ({ raw, tokenize }).');
    }
    const body: { tokens?: unknown; raw?: unknown } = {};
    if (result.raw !== undefined) body.raw = result.raw;
    if (result.tokenize !== undefined) {
      checkTokenizeSize(result.tokenize, this.options.config.REACTOR_MAX_SERVICE_CALLS);
      body.tokens = await this.tokenize(result.tokenize, [], creator, requestId);
    }
    return body;
  }

  /**
   * The same shape with every token-create body (an object with `data`) replaced by the token it
   * created (without its data). A body the tokens API refuses fails the run with its field errors,
   * named under `tokenize.<path>`.
   */
  private async tokenize(
    value: unknown,
    path: string[],
    creator: Principal,
    requestId: string,
  ): Promise<unknown> {
    if (!isPlainObject(value)) {
      throw reactorRuntimeProblem(`tokenize${path.map((key) => `.${key}`).join('')} must be an object.`);
    }
    if (Object.hasOwn(value, 'data')) {
      try {
        return (await this.services.call('post /tokens', { body: value }, creator, requestId)).body;
      } catch (error) {
        if (!(error instanceof Problem)) throw error;
        const prefix = ['tokenize', ...path].join('.');
        const errors = error.errors
          ? Object.fromEntries(
              Object.entries(error.errors).map(([field, messages]) => [
                field.replace(/^body/, prefix),
                messages,
              ]),
            )
          : undefined;
        throw new Problem(error.status, error.slug, error.title, error.detail, errors);
      }
    }
    const tokens: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) {
      tokens[key] = await this.tokenize(item, [...path, key], creator, requestId);
    }
    return tokens;
  }
}

/**
 * A proxy transform's `{ headers, body }`, as it answered them (anything but an object is its
 * error). The proxy checks the headers themselves, as it does a reactor stage's (a 422).
 */
function transformAnswer(result: unknown): { headers?: unknown; body?: unknown } {
  if (!isPlainObject(result)) {
    throw reactorRuntimeProblem('The transform must return an object ({ headers, body }).');
  }
  return {
    ...(result.headers === undefined ? {} : { headers: result.headers }),
    ...(result.body === undefined ? {} : { body: result.body }),
  };
}

/** Levels of nested objects `tokenize` may have (its shape is names, not data). */
const maxTokenizeDepth = 16;

/**
 * Token creations happen after the sandbox, outside its limits: at most as many as the run's
 * service calls, in a shape of bounded depth, checked before the first one is made.
 */
function checkTokenizeSize(tokenize: unknown, maxTokens: number): void {
  let bodies = 0;
  const pending: { value: unknown; depth: number }[] = [{ value: tokenize, depth: 1 }];
  for (let next = pending.pop(); next; next = pending.pop()) {
    if (next.depth > maxTokenizeDepth) {
      throw reactorRuntimeProblem(`tokenize is nested deeper than ${maxTokenizeDepth} levels.`);
    }
    if (!isPlainObject(next.value)) continue;
    if (Object.hasOwn(next.value, 'data')) {
      if (++bodies > maxTokens) throw reactorRuntimeProblem(`tokenize holds more than ${maxTokens} tokens.`);
      continue;
    }
    for (const item of Object.values(next.value)) pending.push({ value: item, depth: next.depth + 1 });
  }
}

/** `reactor/BadRequestError` → `BadRequestError`; a service problem keeps its slug. */
const outcomeName = (problem: ProblemData) => problem.slug.replace(/^reactor\//, '');

const reactorRuntimeProblem = (detail: string) =>
  new Problem(500, 'reactor-runtime', 'Internal Server Error', detail);

/** A reactor's thrown error (an SDK class, or anything else as ReactorRuntimeError) as a problem. */
function reactorProblem(outcome: Extract<SandboxOutcome, { ok: false }>): ProblemData {
  const { name, status, message, errors } = outcome.error;
  return {
    status,
    slug: `reactor/${name}`,
    title: STATUS_CODES[status] ?? name,
    detail: message,
    ...(errors ? { errors } : {}),
  };
}
