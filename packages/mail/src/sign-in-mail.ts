import { createQueue, signInMailQueueName, type Job, type Queue } from '@tokenvault/jobs';
import type { Logger } from '@tokenvault/platform';
import type { Sessions } from '@tokenvault/tenancy';
import { MailWorker, type MailConfig, type SendMail } from './mail-worker.ts';
import { renderSignInEmail } from './render.ts';

/** The link's id only: the worker derives the token again, so no payload ever holds it. */
export interface SignInMailJob {
  link_id: string;
}

export function createSignInMailQueue(config: MailConfig): Queue<SignInMailJob> {
  return createQueue<SignInMailJob>(signInMailQueueName, config, {
    attempts: config.EMAIL_ATTEMPTS,
    backoff: { type: 'exponential', delay: config.EMAIL_BACKOFF_MS },
    removeOnComplete: { age: 24 * 3600 },
    removeOnFail: { age: 7 * 24 * 3600 },
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
  private readonly mail: MailWorker<SignInMailJob, SignInMailOutcome>;
  private readonly options: { config: MailConfig; sessions: Sessions; logger: Logger };

  constructor(options: { config: MailConfig; sessions: Sessions; logger: Logger }) {
    this.options = options;
    this.mail = new MailWorker({
      queueName: signInMailQueueName,
      kind: 'sign-in e-mail',
      config: options.config,
      logger: options.logger,
      process: (job, send) => this.process(job, send),
    });
  }

  start(): void {
    this.mail.start();
  }

  close(): Promise<void> {
    return this.mail.close();
  }

  private async process(
    job: Job<SignInMailJob, SignInMailOutcome>,
    send: SendMail,
  ): Promise<SignInMailOutcome> {
    const { config, sessions, logger } = this.options;
    const mail = await sessions.mailOf(job.data.link_id);
    if (!mail) {
      logger.info({ jobId: job.id }, 'sign-in e-mail skipped: the link is no longer usable');
      return 'unusable';
    }
    // In the fragment, which browsers never send: the token stays out of proxy and access logs.
    const signInUrl = `${config.PUBLIC_URL}/sign-in#token=${encodeURIComponent(mail.token)}`;
    const message = renderSignInEmail({ signInUrl, expiresAt: mail.expiresAt });
    await send({
      from: config.SMTP_FROM,
      to: mail.email,
      subject: message.subject,
      text: message.text,
      html: message.html,
      messageId: `<sign-in.${job.data.link_id}@tokenvault>`,
    });
    logger.info({ jobId: job.id, attempt: job.attemptsMade + 1 }, 'sign-in e-mail sent');
    return 'sent';
  }
}
