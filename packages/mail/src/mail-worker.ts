import nodemailer from 'nodemailer';
import { createWorker, type Job, type QueueName, type Worker } from '@tokenvault/jobs';
import { failedJobOutcome, queueJobsTotal, type Config, type Logger } from '@tokenvault/platform';

/** What an e-mail queue and its senders read of the configuration. */
export type MailConfig = Pick<
  Config,
  | 'REDIS_URL'
  | 'QUEUE_PREFIX'
  | 'EMAIL_ATTEMPTS'
  | 'EMAIL_BACKOFF_MS'
  | 'SMTP_URL'
  | 'SMTP_FROM'
  | 'PUBLIC_URL'
  | 'WORKER_CONCURRENCY'
>;

/** Sends one message; a refusal is rethrown without the server's text. */
export type SendMail = (message: nodemailer.SendMailOptions) => Promise<void>;

/**
 * The pool of senders of one e-mail queue (invitations, sign-in links): the SMTP transport, the
 * BullMQ worker, its metrics and logs. Each job's `process` decides and renders; it sends through
 * `send`. close() waits for the jobs in flight. Messages, tokens and addresses are never logged.
 */
export class MailWorker<Data, Outcome extends string> {
  private readonly worker: Worker<Data, Outcome>;
  private readonly transport: nodemailer.Transporter;
  private readonly logger: Logger;
  private readonly kind: string;

  constructor(options: {
    queueName: QueueName;
    /** What is sent, for the logs: "invitation e-mail". */
    kind: string;
    config: MailConfig;
    logger: Logger;
    process(job: Job<Data, Outcome>, send: SendMail): Promise<Outcome>;
  }) {
    const { queueName, kind, config, logger } = options;
    this.logger = logger;
    this.kind = kind;
    // Bounded waits: a stuck SMTP server must not outlast a graceful shutdown.
    this.transport = nodemailer.createTransport(config.SMTP_URL, {
      connectionTimeout: 10_000,
      greetingTimeout: 10_000,
      socketTimeout: 10_000,
    });
    const send: SendMail = async (message) => {
      await this.transport.sendMail(message).catch((error: { responseCode?: number; code?: string }) => {
        // Rethrown without the server's text (it can quote the address), which BullMQ would keep
        // as the job's failure reason in Redis.
        throw new Error(`SMTP delivery failed (${error.responseCode ?? error.code ?? 'unknown'})`);
      });
    };
    this.worker = createWorker<Data, Outcome>(
      queueName,
      config,
      (job) => options.process(job, send),
      { concurrency: config.WORKER_CONCURRENCY },
      logger,
    );
    this.worker.on('completed', () => queueJobsTotal.inc({ queue: queueName, outcome: 'completed' }));
    this.worker.on('failed', (job, error) => {
      queueJobsTotal.inc({ queue: queueName, outcome: failedJobOutcome(job) });
      logger.warn(
        // Never the message: an SMTP server's reply can quote the recipient's address.
        {
          jobId: job?.id,
          attemptsMade: job?.attemptsMade,
          code:
            (error as { responseCode?: number; code?: string }).responseCode ??
            (error as { code?: string }).code,
        },
        `${kind} not sent; it will be retried while attempts remain`,
      );
    });
  }

  start(): void {
    void this.worker
      .run()
      .catch((error: unknown) => this.logger.error({ err: error }, `${this.kind} worker stopped`));
  }

  /** Waits for the jobs in flight to finish; nothing new is taken. */
  async close(): Promise<void> {
    await this.worker.close();
    this.transport.close();
  }
}
