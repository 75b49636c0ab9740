import { createWorker, reactorRunQueueName, type Job, type Worker } from '@tokenvault/jobs';
import { createRedis, failedJobOutcome, queueJobsTotal, type Config, type Redis } from '@tokenvault/platform';
import type { Vault } from '@tokenvault/vault';
import { CodeRunner, type CodeRunnerOptions } from './code-runner.ts';
import { sealedOutcomeSubject, sealedRequestSubject, type CodeRunJob } from './run-job.ts';
import { recordRun } from './run-metrics.ts';
import { replyListPrefix, sendRunReply, type RunReply } from './run-replies.ts';
import { runFailure, type CodeRunOutcome, type CodeRunRequest } from './run-request.ts';

export interface CodeRunWorkerOptions extends CodeRunnerOptions {
  config: CodeRunnerOptions['config'] & Pick<Config, 'REDIS_URL' | 'QUEUE_PREFIX'>;
  vault: Vault;
}

/**
 * The worker pool of code runs: takes runs off the BullMQ queue, opens each sealed request, has
 * the sandbox run it (code-runner.ts), seals the outcome and tells the gateway that waits for it.
 * The code's own errors are outcomes, not job failures; a job fails only when the run could not be
 * carried out.
 */
export class CodeRunWorker {
  private readonly worker: Worker<CodeRunJob, string>;
  private readonly runner: CodeRunner;
  /** Where replies go to the gateways waiting on runs. */
  private readonly replies: Redis;
  private readonly options: CodeRunWorkerOptions;

  private constructor(options: CodeRunWorkerOptions, runner: CodeRunner) {
    this.options = options;
    this.runner = runner;
    this.replies = createRedis(options.config.REDIS_URL);
    this.replies.on('error', (error) => options.logger.warn({ err: error }, 'reactor run replies error'));
    this.worker = createWorker<CodeRunJob, string>(
      reactorRunQueueName,
      options.config,
      (job) => this.process(job),
      {
        concurrency: options.config.REACTOR_CONCURRENCY,
        // A run whose worker died is failed, never run again: tenant code may not be idempotent.
        maxStalledCount: 0,
      },
      options.logger,
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
  }

  static async start(options: CodeRunWorkerOptions): Promise<CodeRunWorker> {
    const runner = await CodeRunner.start(options);
    const worker = new CodeRunWorker(options, runner);
    void worker.worker
      .run()
      .catch((error: unknown) => options.logger.error({ err: error }, 'reactor worker stopped'));
    return worker;
  }

  /** Runs in flight finish; nothing new is taken; then the sandbox processes go. */
  async close(): Promise<void> {
    await this.worker.close();
    await this.runner.close();
    await this.replies.quit().catch(() => this.replies.disconnect());
  }

  /**
   * Never fails with the cause: BullMQ would keep its message and stack in Redis in the clear, and
   * a message can quote input. The cause is logged (errors are logged without statement data).
   */
  private async process(job: Job<CodeRunJob, string>): Promise<string> {
    const { vault, logger } = this.options;
    const runId = job.id!;
    const tenantId = job.data.tenant_id;
    const started = process.hrtime.bigint();
    let outcome: CodeRunOutcome | undefined;
    try {
      const request = (await vault.decrypt(
        tenantId,
        sealedRequestSubject(runId),
        job.data.sealed_request,
      )) as CodeRunRequest;
      outcome = await this.runner.run(request);
    } catch (error) {
      logger.error({ err: error, jobId: runId }, 'reactor run could not be carried out');
    }
    recordRun(outcome, started);
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
  private async forgetRequest(job: Job<CodeRunJob, string>): Promise<void> {
    if (job.opts.removeOnComplete === true) return;
    await job
      .updateData({ ...job.data, sealed_request: '' })
      .catch((error: unknown) =>
        this.options.logger.warn({ err: error, jobId: job.id }, 'reactor run request could not be dropped'),
      );
  }

  /** Tells the gateway that queued the run (a job without `reply_to` came from an older one). */
  private async reply(job: Job<CodeRunJob, string>, reply: RunReply): Promise<void> {
    const replyTo = job.data.reply_to;
    if (!replyTo?.startsWith(replyListPrefix(this.options.config.QUEUE_PREFIX))) return;
    try {
      await sendRunReply(this.replies, replyTo, reply);
    } catch (error) {
      // The gateway's wait times out (504); an async run's result is still in its job.
      this.options.logger.warn({ err: error, jobId: job.id }, 'reactor run reply could not be sent');
    }
  }
}
