import { Queue, Worker, type Job } from 'bullmq';
import nodemailer from 'nodemailer';
import { failedJobOutcome, queueJobsTotal, type Config, type Logger } from '@tokenvault/platform';
import type { Sessions } from '@tokenvault/tenancy';
import { queueConnection } from './invitation-mail.ts';
import { renderSignInEmail } from './render.ts';

export const signInMailQueueName = 'sign-in-email';

/** The link's id only: the worker derives the token again, so no payload ever holds it. */
export interface SignInMailJob {
  link_id: string;
}

type MailConfig = Pick<
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

export function createSignInMailQueue(config: MailConfig): Queue<SignInMailJob> {
  return new Queue<SignInMailJob>(signInMailQueueName, {
    connection: queueConnection(config),
    prefix: config.QUEUE_PREFIX,
    defaultJobOptions: {
      attempts: config.EMAIL_ATTEMPTS,
      backoff: { type: 'exponential', delay: config.EMAIL_BACKOFF_MS },
      removeOnComplete: { age: 24 * 3600 },
      removeOnFail: { age: 7 * 24 * 3600 },
    },
  });
}

/** Queues the e-mail of one link (once: the job id is the link's). */
export async function enqueueSignInMail(queue: Queue<SignInMailJob>, linkId: string): Promise<void> {
  await queue.add('send', { link_id: linkId }, { jobId: `sign-in.${linkId}` });
}

export type SignInMailOutcome = 'sent' | 'unusable';

/**
 * Sends sign-in e-mails: a job whose link was used, replaced or has expired meanwhile is skipped.
 * Neither the token nor the link nor the address is ever logged.
 */
export class SignInMailWorker {
  private readonly worker: Worker<SignInMailJob, SignInMailOutcome>;
  private readonly transport: nodemailer.Transporter;
  private readonly options: { config: MailConfig; sessions: Sessions; logger: Logger };

  constructor(options: { config: MailConfig; sessions: Sessions; logger: Logger }) {
    this.options = options;
    const { config, logger } = options;
    this.transport = nodemailer.createTransport(config.SMTP_URL, {
      connectionTimeout: 10_000,
      greetingTimeout: 10_000,
      socketTimeout: 10_000,
    });
    this.worker = new Worker<SignInMailJob, SignInMailOutcome>(
      signInMailQueueName,
      (job) => this.process(job),
      {
        connection: queueConnection(config),
        prefix: config.QUEUE_PREFIX,
        concurrency: config.WORKER_CONCURRENCY,
        autorun: false,
      },
    );
    this.worker.on('completed', () =>
      queueJobsTotal.inc({ queue: signInMailQueueName, outcome: 'completed' }),
    );
    this.worker.on('failed', (job, error) => {
      queueJobsTotal.inc({ queue: signInMailQueueName, outcome: failedJobOutcome(job) });
      logger.warn(
        {
          jobId: job?.id,
          attemptsMade: job?.attemptsMade,
          code:
            (error as { responseCode?: number; code?: string }).responseCode ??
            (error as { code?: string }).code,
        },
        'sign-in e-mail not sent; it will be retried while attempts remain',
      );
    });
    this.worker.on('error', (error) => logger.warn({ err: error }, 'sign-in e-mail worker error'));
  }

  start(): void {
    void this.worker
      .run()
      .catch((error: unknown) => this.options.logger.error({ err: error }, 'sign-in e-mail worker stopped'));
  }

  async close(): Promise<void> {
    await this.worker.close();
    this.transport.close();
  }

  private async process(job: Job<SignInMailJob, SignInMailOutcome>): Promise<SignInMailOutcome> {
    const { config, sessions, logger } = this.options;
    const mail = await sessions.mailOf(job.data.link_id);
    if (!mail) {
      logger.info({ jobId: job.id }, 'sign-in e-mail skipped: the link is no longer usable');
      return 'unusable';
    }
    // In the fragment, which browsers never send: the token stays out of proxy and access logs.
    const signInUrl = `${config.PUBLIC_URL}/sign-in#token=${encodeURIComponent(mail.token)}`;
    const message = renderSignInEmail({ signInUrl, expiresAt: mail.expiresAt });
    await this.transport
      .sendMail({
        from: config.SMTP_FROM,
        to: mail.email,
        subject: message.subject,
        text: message.text,
        html: message.html,
        messageId: `<sign-in.${job.data.link_id}@tokenvault>`,
      })
      .catch((error: { responseCode?: number; code?: string }) => {
        throw new Error(`SMTP delivery failed (${error.responseCode ?? error.code ?? 'unknown'})`);
      });
    logger.info({ jobId: job.id, attempt: job.attemptsMade + 1 }, 'sign-in e-mail sent');
    return 'sent';
  }
}

/** Removes every key of the sign-in queue under a prefix (tests' throw-away prefixes). */
export async function obliterateSignInMailQueue(config: Pick<Config, 'REDIS_URL' | 'QUEUE_PREFIX'>) {
  const queue = new Queue(signInMailQueueName, {
    connection: queueConnection(config),
    prefix: config.QUEUE_PREFIX,
  });
  try {
    await queue.obliterate({ force: true });
  } finally {
    await queue.close();
  }
}
