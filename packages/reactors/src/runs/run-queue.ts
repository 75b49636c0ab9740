import { randomUUID } from 'node:crypto';
import { createQueue, reactorRunQueueName, type Job, type Queue } from '@tokenvault/jobs';
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
import { RunReplies } from './run-replies.ts';

type RunQueueConfig = Pick<
  Config,
  'REDIS_URL' | 'QUEUE_PREFIX' | 'REACTOR_TIMEOUT_MS' | 'REACTOR_RESULT_TTL_SECONDS'
>;

/** Time a sync call also allows for the queue hand-off, beyond the run's own wall time. */
const queueGraceMs = 2_000;

/** `withdrawn`: the result saw a token deleted since, and is gone with it. */
export type ReactorRunStatus =
  | { status: 'pending' }
  | { status: 'withdrawn' }
  | { status: 'completed' | 'failed'; outcome: ReactorRunOutcome };

/** Whether every one of these tokens of the tenant is still live (not deleted, not expired). */
export type TokensLive = (tenantId: string, tokenIds: readonly string[]) => Promise<boolean>;

/**
 * The gateway's side of reactor runs: puts a sealed run on the BullMQ queue and hears back from
 * the worker on this process's reply list (run-replies.ts): a sync call gets its sealed outcome
 * there, an async call's tenant slot is freed by it. Async runs are reported by id from the job.
 * Runs are never retried (reactor code is not known to be idempotent); async outcomes are kept for
 * REACTOR_RESULT_TTL_SECONDS, sync jobs go as soon as they finish.
 */
export class ReactorRunQueue {
  private readonly queue: Queue<ReactorRunJob, string>;
  private readonly replies: RunReplies;
  /** Async runs this process queued and has not heard back from yet: what `settled` waits for. */
  private readonly asyncRuns = new Map<string, Promise<unknown>>();

  private readonly config: RunQueueConfig;
  private readonly vault: Vault;

  constructor(config: RunQueueConfig, vault: Vault, logger: Logger) {
    this.config = config;
    this.vault = vault;
    this.queue = createQueue<ReactorRunJob, string>(reactorRunQueueName, config, { attempts: 1 });
    this.queue.on('error', (error) => logger.warn({ err: error }, 'reactor run queue error'));
    this.replies = new RunReplies(config.REDIS_URL, config.QUEUE_PREFIX, logger);
  }

  /**
   * Resolves once this process's async run has finished (completed or failed), after `withinMs`,
   * or when the queue closes, whichever comes first (what holds an async invocation's concurrency
   * slot). A run this process did not queue, or already heard back from, is settled.
   */
  async settled(runId: string, withinMs: number): Promise<void> {
    const finished = this.asyncRuns.get(runId);
    if (!finished) return;
    let timer: NodeJS.Timeout | undefined;
    const lapsed = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, withinMs);
      timer.unref();
    });
    try {
      await Promise.race([finished, lapsed]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Seals the request and queues it; the job's id is the async request id. An async run's outcome
   * is kept for REACTOR_RESULT_TTL_SECONDS; a sync one's job is removed as soon as it finishes (its
   * caller has the outcome from the reply).
   */
  async submit(
    tenantId: string,
    reactorId: string,
    request: ReactorRunRequest,
  ): Promise<Job<ReactorRunJob, string>> {
    const runId = randomUUID();
    // Listening before queueing: the reply may come before `add` has answered. An async run is
    // waited for as long as its tenant slot can be held (twice the timeout and 30 s, see guards).
    const replied = this.replies.expect(runId, 2 * this.config.REACTOR_TIMEOUT_MS + 30_000);
    this.asyncRuns.set(runId, replied);
    void replied.finally(() => this.asyncRuns.delete(runId));
    try {
      const keptFor = { age: this.config.REACTOR_RESULT_TTL_SECONDS };
      return await this.queue.add('run', await this.jobOf(runId, tenantId, reactorId, request), {
        jobId: runId,
        removeOnComplete: keptFor,
        removeOnFail: keptFor,
      });
    } catch (error) {
      this.replies.cancel(runId);
      throw error;
    }
  }

  /** A sync run: its outcome, or a 504 when it did not finish within the reactor timeout. */
  async run(tenantId: string, reactorId: string, request: ReactorRunRequest): Promise<ReactorRunOutcome> {
    const runId = randomUUID();
    return this.runJob(runId, await this.jobOf(runId, tenantId, reactorId, request));
  }

  /**
   * A proxy's code transform, run sync like a reactor (same queue, workers and sandbox): its
   * outcome's `raw` is what the code answered (`{ headers, body }`).
   */
  async runTransform(
    tenantId: string,
    proxyId: string,
    request: Omit<ReactorRunRequest, 'answers'>,
  ): Promise<ReactorRunOutcome> {
    const runId = randomUUID();
    const job = await this.jobOf(runId, tenantId, '', { ...request, answers: 'transform' });
    return this.runJob(runId, { ...job, proxy_id: proxyId });
  }

  private async runJob(runId: string, data: ReactorRunJob): Promise<ReactorRunOutcome> {
    const tenantId = data.tenant_id;
    const replied = this.replies.expect(runId, this.config.REACTOR_TIMEOUT_MS + queueGraceMs);
    let job: Job<ReactorRunJob, string>;
    try {
      job = await this.queue.add('run', data, {
        jobId: runId,
        removeOnComplete: true,
        removeOnFail: true,
      });
    } catch (error) {
      this.replies.cancel(runId);
      throw error;
    }
    const reply = await replied;
    if (!reply) {
      // Still waiting (workers saturated): dropped, so it does not run after its caller was told
      // it failed. One that already started cannot be removed and finishes unobserved.
      await job.remove().catch(() => undefined);
      throw new Problem(
        504,
        'reactor-timeout',
        'Gateway Timeout',
        `The reactor did not finish within ${this.config.REACTOR_TIMEOUT_MS} ms.`,
      );
    }
    if (reply.sealed_outcome === undefined) return runFailure;
    return this.open(tenantId, runId, reply.sealed_outcome);
  }

  /**
   * An async run of this reactor that this caller started, or undefined (unknown, expired,
   * another's). A result that saw a token no longer live is removed, not answered: a deleted
   * token's data does not come back from here.
   */
  async status(
    caller: Pick<Principal, 'tenantId' | 'actorId'>,
    reactorId: string,
    runId: string,
    tokensLive: TokensLive,
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
      if (outcome.token_ids?.length && !(await tokensLive(tenantId, outcome.token_ids))) {
        await finished.remove();
        return { status: 'withdrawn' };
      }
      return { status: outcome.ok ? 'completed' : 'failed', outcome };
    }
    if (state === 'failed') return { status: 'failed', outcome: runFailure };
    return { status: 'pending' };
  }

  async close(): Promise<void> {
    await this.replies.close();
    await this.queue.close();
  }

  private async jobOf(
    runId: string,
    tenantId: string,
    reactorId: string,
    request: ReactorRunRequest,
  ): Promise<ReactorRunJob> {
    return {
      tenant_id: tenantId,
      reactor_id: reactorId,
      actor_id: request.caller.actorId,
      sealed_request: await this.vault.encrypt(tenantId, sealedRequestSubject(runId), request),
      reply_to: this.replies.key,
    };
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
