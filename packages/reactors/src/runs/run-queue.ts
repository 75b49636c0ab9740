import { randomUUID } from 'node:crypto';
import {
  createQueue,
  createQueueEvents,
  reactorRunQueueName,
  type Job,
  type Queue,
  type QueueEvents,
} from '@tokenvault/jobs';
import { Problem, type Config, type Logger, type Principal } from '@tokenvault/platform';
import type { Vault } from '@tokenvault/vault';
import {
  problemFromData,
  sealedOutcomeSubject,
  sealedRequestSubject,
  type ReactorRunJob,
  type ReactorRunOutcome,
  type ReactorRunRequest,
  runFailure,
} from './run-messages.ts';

type RunQueueConfig = Pick<
  Config,
  'REDIS_URL' | 'QUEUE_PREFIX' | 'REACTOR_TIMEOUT_MS' | 'REACTOR_RESULT_TTL_SECONDS'
>;

/** Time a sync call also allows for the queue hand-off, beyond the run's own wall time. */
const queueGraceMs = 2_000;

export type ReactorRunStatus =
  { status: 'pending' } | { status: 'completed' | 'failed'; outcome: ReactorRunOutcome };

/**
 * The gateway's side of reactor runs: puts a sealed run on the BullMQ queue, waits for a sync
 * run's sealed outcome, and reports async runs by id. Runs are never retried (reactor code is not
 * known to be idempotent), and outcomes are kept for REACTOR_RESULT_TTL_SECONDS.
 */
export class ReactorRunQueue {
  private readonly queue: Queue<ReactorRunJob, string>;
  private readonly events: QueueEvents;
  private readonly ready: Promise<unknown>;
  private readonly closing: Promise<void>;
  private closed!: () => void;

  private readonly config: RunQueueConfig;
  private readonly vault: Vault;

  constructor(config: RunQueueConfig, vault: Vault, logger: Logger) {
    this.config = config;
    this.vault = vault;
    const keptFor = { age: config.REACTOR_RESULT_TTL_SECONDS };
    this.queue = createQueue<ReactorRunJob, string>(reactorRunQueueName, config, {
      attempts: 1,
      removeOnComplete: keptFor,
      removeOnFail: keptFor,
    });
    this.queue.on('error', (error) => logger.warn({ err: error }, 'reactor run queue error'));
    this.events = createQueueEvents(reactorRunQueueName, config);
    this.events.on('error', (error) => logger.warn({ err: error }, 'reactor run events error'));
    // Every sync run waiting listens on these events: as many listeners as runs in flight.
    this.events.setMaxListeners(0);
    this.queue.setMaxListeners(0);
    this.ready = this.events.waitUntilReady();
    this.closing = new Promise((resolve) => (this.closed = resolve));
  }

  /**
   * Resolves once this run has finished (completed or failed), after `withinMs`, or when the queue
   * closes, whichever comes first (what holds an async invocation's concurrency slot).
   */
  async settled(runId: string, withinMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const lapsed = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, withinMs);
      timer.unref();
    });
    try {
      const finished = (async () => {
        await this.ready;
        const job: Job<ReactorRunJob, string> | undefined = await this.queue.getJob(runId);
        if (job) await job.waitUntilFinished(this.events);
      })().catch(() => undefined);
      await Promise.race([finished, lapsed, this.closing]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Seals the request and queues it; the job's id is the async request id. An async run's outcome
   * is kept for REACTOR_RESULT_TTL_SECONDS; a sync one's goes as soon as its caller has it.
   */
  async submit(
    tenantId: string,
    reactorId: string,
    request: ReactorRunRequest,
  ): Promise<Job<ReactorRunJob, string>> {
    const runId = randomUUID();
    const job: ReactorRunJob = {
      tenant_id: tenantId,
      reactor_id: reactorId,
      actor_id: request.caller.actorId,
      sealed_request: await this.vault.encrypt(tenantId, sealedRequestSubject(runId), request),
    };
    // A sync run is removed by its caller once it has the outcome (see run): removing it on
    // completion could beat the caller's wait to it, which then finds no job at all.
    return this.queue.add('run', job, { jobId: runId });
  }

  /** A sync run: its outcome, or a 504 when it did not finish within the reactor timeout. */
  async run(tenantId: string, reactorId: string, request: ReactorRunRequest): Promise<ReactorRunOutcome> {
    await this.ready;
    const job = await this.submit(tenantId, reactorId, request);
    let sealedOutcome: string;
    try {
      sealedOutcome = await job.waitUntilFinished(this.events, this.config.REACTOR_TIMEOUT_MS + queueGraceMs);
      await job.remove().catch(() => undefined);
    } catch (error) {
      if (error instanceof Error && /timed out/i.test(error.message)) {
        // Still waiting (workers saturated): dropped, so it does not run after its caller was
        // told it failed. One that already started cannot be removed and finishes unobserved.
        await job.remove().catch(() => undefined);
        throw new Problem(
          504,
          'reactor-timeout',
          'Gateway Timeout',
          `The reactor did not finish within ${this.config.REACTOR_TIMEOUT_MS} ms.`,
        );
      }
      await job.remove().catch(() => undefined);
      throw error;
    }
    return this.open(tenantId, job.id!, sealedOutcome);
  }

  /** An async run of this reactor that this caller started, or undefined (unknown, expired, another's). */
  async status(
    caller: Pick<Principal, 'tenantId' | 'actorId'>,
    reactorId: string,
    runId: string,
  ): Promise<ReactorRunStatus | undefined> {
    const tenantId = caller.tenantId;
    const job: Job<ReactorRunJob, string> | undefined = await this.queue.getJob(runId);
    const theirs =
      job?.data.tenant_id === tenantId &&
      job.data.actor_id === caller.actorId &&
      job.data.reactor_id === reactorId;
    if (!job || !theirs) return undefined;
    const state = await job.getState();
    if (state === 'completed') {
      // The job may have been read while still running (no return value yet): read it again.
      const finished = job.returnvalue ? job : await this.queue.getJob(runId);
      if (!finished?.returnvalue) return undefined;
      const outcome = await this.open(tenantId, runId, finished.returnvalue);
      return { status: outcome.ok ? 'completed' : 'failed', outcome };
    }
    if (state === 'failed') return { status: 'failed', outcome: runFailure };
    return { status: 'pending' };
  }

  async close(): Promise<void> {
    this.closed();
    await this.events.close();
    await this.queue.close();
  }

  private async open(tenantId: string, runId: string, sealed: string): Promise<ReactorRunOutcome> {
    return (await this.vault.decrypt(tenantId, sealedOutcomeSubject(runId), sealed)) as ReactorRunOutcome;
  }
}

/** The sync answer of an outcome: its body, or its problem thrown. */
export function outcomeBody(outcome: ReactorRunOutcome): { tokens?: unknown; raw?: unknown } {
  if (!outcome.ok) throw problemFromData(outcome.problem);
  return outcome.body;
}
