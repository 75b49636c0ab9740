import { randomUUID } from 'node:crypto';
import { createQueue, reactorRunQueueName, type Job, type Queue } from '@tokenvault/jobs';
import { gatewayTimeout, type Config, type Logger, type Principal } from '@tokenvault/platform';
import type { Vault } from '@tokenvault/vault';
import { sealedOutcomeSubject, sealedRequestSubject, type CodeRunJob } from './run-job.ts';
import { runFailure, type CodeRunOutcome, type CodeRunRequest } from './run-request.ts';
import { RunReplies } from './run-replies.ts';

type RunQueueConfig = Pick<
  Config,
  'REDIS_URL' | 'QUEUE_PREFIX' | 'REACTOR_TIMEOUT_MS' | 'REACTOR_RESULT_TTL_SECONDS'
>;

/** Time a sync call also allows for the queue hand-off, beyond the run's own wall time. */
const queueGraceMs = 2_000;

/**
 * The longest anything holds on to one run: past the longest a sync call waits (the run's wall
 * time and the queue's grace), and long enough for an async run to wait its turn and run. An
 * async run's reply is waited for this long, and a caller's slot for a run (a route's tenant
 * concurrency cap) lapses after it, should its holder crash.
 */
export const runHoldMs = (config: Pick<Config, 'REACTOR_TIMEOUT_MS'>): number =>
  2 * config.REACTOR_TIMEOUT_MS + 30_000;

/**
 * `withdrawn`: the result saw a token deleted (or its CVC removed) since, or what decides on one
 * now shows less than the run saw, and is gone with it.
 */
export type CodeRunStatus =
  | { status: 'pending' }
  | { status: 'withdrawn' }
  | { status: 'completed' | 'failed'; outcome: CodeRunOutcome };

/**
 * Whether a result that saw tokens (its `token_ids`) may still be answered: every one of them
 * still live (not deleted, not expired) and holding all it held when the run began (`seenAt`: no
 * card's CVC removed since), and what decides on each now showing as much as the run saw
 * (its `seen`).
 */
export type ResultStillShown = (tenantId: string, outcome: CodeRunOutcome, seenAt: Date) => Promise<boolean>;

/** A failed outcome of tenant code names what ran it (`reactors/<id>`): its log line says so. */
function withSource(outcome: CodeRunOutcome, owner: string): CodeRunOutcome {
  if (outcome.ok || outcome.problem.tenant_code === undefined) return outcome;
  return {
    ...outcome,
    problem: { ...outcome.problem, tenant_code: { ...outcome.problem.tenant_code, source: owner } },
  };
}

/**
 * The gateway's side of code runs (reactor invocations, proxy stages): puts a sealed run on the
 * BullMQ queue and hears back from the worker on this process's reply list (run-replies.ts): a
 * sync call gets its sealed outcome there, an async call's tenant slot is freed by it. Async runs
 * are reported by id from the job. Runs are never retried (tenant code is not known to be
 * idempotent); async outcomes are kept for REACTOR_RESULT_TTL_SECONDS, sync jobs go as soon as
 * they finish.
 */
export class CodeRunQueue {
  /** How long an async run is waited for, and a slot held for one: `runHoldMs`. */
  readonly holdMs: number;
  private readonly queue: Queue<CodeRunJob, string>;
  private readonly replies: RunReplies;
  /** Async runs this process queued and has not heard back from yet: what `settled` waits for. */
  private readonly asyncRuns = new Map<string, Promise<unknown>>();

  private readonly config: RunQueueConfig;
  private readonly vault: Vault;

  constructor(config: RunQueueConfig, vault: Vault, logger: Logger) {
    this.config = config;
    this.vault = vault;
    this.holdMs = runHoldMs(config);
    this.queue = createQueue<CodeRunJob, string>(reactorRunQueueName, config, logger, { attempts: 1 });
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
  async submit(tenantId: string, owner: string, request: CodeRunRequest): Promise<Job<CodeRunJob, string>> {
    const runId = randomUUID();
    // Listening before queueing: the reply may come before `add` has answered. An async run is
    // waited for as long as a slot can be held for it (runHoldMs).
    const replied = this.replies.expect(runId, this.holdMs);
    this.asyncRuns.set(runId, replied);
    void replied.finally(() => this.asyncRuns.delete(runId));
    return this.enqueue(runId, this.jobOf(runId, tenantId, owner, request), {
      age: this.config.REACTOR_RESULT_TTL_SECONDS,
    });
  }

  /** A sync run: its outcome, or a 504 when it did not finish within the reactor timeout. */
  async run(tenantId: string, owner: string, request: CodeRunRequest): Promise<CodeRunOutcome> {
    const runId = randomUUID();
    const data = await this.jobOf(runId, tenantId, owner, request);
    const replied = this.replies.expect(runId, this.config.REACTOR_TIMEOUT_MS + queueGraceMs);
    const job = await this.enqueue(runId, data, true);
    const reply = await replied;
    if (!reply) {
      // Still waiting (workers saturated): dropped, so it does not run after its caller was told
      // it failed. One that already started cannot be removed and finishes unobserved.
      await job.remove().catch(() => undefined);
      throw gatewayTimeout(`The reactor did not finish within ${this.config.REACTOR_TIMEOUT_MS} ms.`, {
        type: 'reactor-timeout',
      });
    }
    if (reply.sealed_outcome === undefined) return runFailure;
    return withSource(await this.open(tenantId, runId, reply.sealed_outcome), owner);
  }

  /**
   * An async run of this owner's code that this caller started, or undefined (unknown, expired,
   * another's). A result that saw a token no longer live, or that what decides on a token now
   * shows less of than the run saw (`stillShown`), is removed, not answered: a deleted token's
   * data, or more than a narrowed rule shows, does not come back from here.
   */
  async status(
    caller: Pick<Principal, 'tenantId' | 'actorId'>,
    owner: string,
    runId: string,
    stillShown: ResultStillShown,
  ): Promise<CodeRunStatus | undefined> {
    const tenantId = caller.tenantId;
    const job: Job<CodeRunJob, string> | undefined = await this.queue.getJob(runId);
    const theirs =
      job?.data.tenant_id === tenantId && job.data.actor_id === caller.actorId && job.data.owner === owner;
    if (!job || !theirs) return undefined;
    const state = await job.getState();
    if (state === 'completed') {
      // The job may have been read while still running (no return value yet): read it again.
      const finished = job.returnvalue ? job : await this.queue.getJob(runId);
      if (!finished?.returnvalue) return undefined;
      const outcome = await this.open(tenantId, runId, finished.returnvalue);
      // The run's args were read when it was asked for (reads_from), what `svc` read after the
      // worker took it (processedOn): the earliest bounds what the run saw.
      const seenAt = new Date(outcome.reads_from ?? finished.processedOn ?? finished.timestamp);
      if (outcome.token_ids?.length && !(await stillShown(tenantId, outcome, seenAt))) {
        await finished.remove();
        return { status: 'withdrawn' };
      }
      return { status: outcome.ok ? 'completed' : 'failed', outcome: withSource(outcome, owner) };
    }
    if (state === 'failed') return { status: 'failed', outcome: runFailure };
    return { status: 'pending' };
  }

  async close(): Promise<void> {
    await this.replies.close();
    await this.queue.close();
  }

  /** Queues the run, or stops waiting for its reply when it could not be queued. */
  private async enqueue(
    runId: string,
    data: CodeRunJob | Promise<CodeRunJob>,
    removeWhenDone: true | { age: number },
  ): Promise<Job<CodeRunJob, string>> {
    try {
      return await this.queue.add('run', await data, {
        jobId: runId,
        removeOnComplete: removeWhenDone,
        removeOnFail: removeWhenDone,
      });
    } catch (error) {
      this.replies.cancel(runId);
      throw error;
    }
  }

  private async jobOf(
    runId: string,
    tenantId: string,
    owner: string,
    request: CodeRunRequest,
  ): Promise<CodeRunJob> {
    return {
      tenant_id: tenantId,
      owner,
      actor_id: request.caller.actorId,
      sealed_request: await this.vault.encrypt(tenantId, sealedRequestSubject(runId), request),
      reply_to: this.replies.key,
    };
  }

  private async open(tenantId: string, runId: string, sealed: string): Promise<CodeRunOutcome> {
    return (await this.vault.decrypt(tenantId, sealedOutcomeSubject(runId), sealed)) as CodeRunOutcome;
  }
}
