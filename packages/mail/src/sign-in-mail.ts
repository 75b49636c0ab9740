import { signInMailQueueName, type Job, type Queue } from '@tokenvault/jobs';
import type { Logger } from '@tokenvault/platform';
import type { Sessions } from '@tokenvault/tenancy';
import { createMailQueue } from './mail-jobs.ts';
import { MailWorker, type MailConfig, type SendMail } from './mail-worker.ts';
import { renderSignInEmail } from './render.ts';

/** The link's id only: the worker derives the token again, so no payload ever holds it. */
export interface SignInMailJob {
  link_id: string;
}

export const createSignInMailQueue = (config: MailConfig, logger: Logger): Queue<SignInMailJob> =>
  createMailQueue<SignInMailJob>(signInMailQueueName, config, logger, {
    daysAfterSuccess: 1,
    daysAfterFailure: 7,
  });

/** Queues the e-mail of one link (once: the job id is the link's). */
export async function enqueueSignInMail(queue: Queue<SignInMailJob>, linkId: string): Promise<void> {
  await queue.add('send', { link_id: linkId }, { jobId: `sign-in.${linkId}` });
}

export type SignInMailOutcome = 'sent' | 'unusable';

/**
 * The sign-in e-mails' senders: a job whose link was used, replaced or has expired meanwhile is
 * skipped. Neither the token nor the link nor the address is ever logged.
 */
export function signInMailWorker(options: {
  config: MailConfig;
  sessions: Sessions;
  logger: Logger;
}): MailWorker<SignInMailJob, SignInMailOutcome> {
  const { config, sessions, logger } = options;
  const process = async (
    job: Job<SignInMailJob, SignInMailOutcome>,
    send: SendMail,
  ): Promise<SignInMailOutcome> => {
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
  };
  return new MailWorker({ queueName: signInMailQueueName, kind: 'sign-in e-mail', config, logger, process });
}
