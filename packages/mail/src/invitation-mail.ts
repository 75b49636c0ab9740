import { invitationMailQueueName, type Job, type Queue } from '@tokenvault/jobs';
import type { EventStore } from '@tokenvault/eventstore';
import type { Clock, Config, Logger, Pool } from '@tokenvault/platform';
import { loadInvitationMailFacts, type InvitationLinks } from '@tokenvault/tenancy';
import { createMailQueue, mailEnqueuer, startMailFlow } from './mail-jobs.ts';
import { MailWorker, type MailConfig, type SendMail } from './mail-worker.ts';
import { renderInvitationEmail } from './render.ts';

/** Ids and a version only: the link token is derived again by the worker, never carried. */
export interface InvitationMailJob {
  tenant_id: string;
  invitation_id: string;
  link_version: number;
}

/** One job per link: a duplicate enqueue (a replay after a crash) is ignored by BullMQ. */
export const invitationMailJobId = (job: InvitationMailJob) =>
  `invitation.${job.invitation_id}.v${job.link_version}`;

export const createInvitationMailQueue = (config: MailConfig, logger: Logger): Queue<InvitationMailJob> =>
  createMailQueue<InvitationMailJob>(invitationMailQueueName, config, logger, {
    daysAfterSuccess: 7,
    daysAfterFailure: 30,
  });

/** The enqueuer's row of projection_checkpoints. */
export const invitationMailEnqueuerName = 'invitation-mail-enqueuer';

/** Turns InvitationCreated and InvitationResent events into e-mail jobs, one per link. */
export function invitationMailEnqueuer(options: {
  store: EventStore;
  /** The owner role: the checkpoint table. */
  pool: Pool;
  queue: Queue<InvitationMailJob>;
  logger: Logger;
  /** The processor's lease time (PROCESSOR_LEASE_MS); EventProcessor's default when absent. */
  leaseMs?: number;
}) {
  return mailEnqueuer<InvitationMailJob>({
    ...options,
    name: invitationMailEnqueuerName,
    eventTypes: ['InvitationCreated', 'InvitationResent'],
    jobOf(event) {
      const data = event.data as InvitationMailJob;
      const job: InvitationMailJob = {
        tenant_id: data.tenant_id,
        invitation_id: data.invitation_id,
        link_version: data.link_version,
      };
      return { data: job, jobId: invitationMailJobId(job) };
    },
  });
}

export type MailOutcome = 'sent' | 'not-pending' | 'stale-link' | 'expired';

export interface InvitationMailWorkerOptions {
  config: MailConfig;
  store: EventStore;
  appPool: Pool;
  links: InvitationLinks;
  clock: Clock;
  logger: Logger;
}

/**
 * The invitation e-mails' senders: each job reads the invitation from its event stream, skips it
 * when it is gone, its link was replaced or it expired, and otherwise derives the link token,
 * renders the message and sends it. Neither the token nor the link is ever logged.
 */
export function invitationMailWorker(
  options: InvitationMailWorkerOptions,
): MailWorker<InvitationMailJob, MailOutcome> {
  const { config, store, appPool, links, clock, logger } = options;
  const process = async (job: Job<InvitationMailJob, MailOutcome>, send: SendMail): Promise<MailOutcome> => {
    const { tenant_id: tenantId, invitation_id: invitationId, link_version: linkVersion } = job.data;
    const facts = await loadInvitationMailFacts(store, appPool, tenantId, invitationId);
    const outcome: MailOutcome = !facts
      ? 'not-pending'
      : facts.linkVersion !== linkVersion
        ? 'stale-link'
        : Date.parse(facts.expiresAt) <= clock.now().getTime()
          ? 'expired'
          : 'sent';
    if (outcome !== 'sent' || !facts) {
      logger.info({ jobId: job.id, outcome }, 'invitation e-mail skipped');
      return outcome;
    }
    const token = links.token({ tenantId, invitationId, linkVersion });
    // In the fragment, which browsers never send: the token stays out of proxy and access logs.
    const acceptUrl = `${config.PUBLIC_URL}/tenants/invitations/accept#token=${encodeURIComponent(token)}`;
    const message = renderInvitationEmail({
      tenantName: facts.tenantName,
      inviter: facts.inviter,
      expiresAt: facts.expiresAt,
      acceptUrl,
    });
    await send({
      from: config.SMTP_FROM,
      to: facts.email,
      subject: message.subject,
      text: message.text,
      html: message.html,
      // The same Message-ID on every attempt of one link: receivers can drop a duplicate.
      messageId: `<invitation.${invitationId}.v${linkVersion}@tokenvault>`,
    });
    logger.info({ jobId: job.id, attempt: job.attemptsMade + 1 }, 'invitation e-mail sent');
    return outcome;
  };
  return new MailWorker({
    queueName: invitationMailQueueName,
    kind: 'invitation e-mail',
    config,
    logger,
    process,
  });
}

/** The e-mail side of invitations in one piece: the enqueuer, the queue and the senders. */
export function startInvitationMail(
  options: InvitationMailWorkerOptions & {
    ownerPool: Pool;
    /** Default true: a process may run the enqueuer alone. */
    worker?: boolean;
    /** The enqueuer's lease time comes from here too. */
    config: Pick<Config, 'PROCESSOR_LEASE_MS'>;
  },
): Promise<{ stop(): Promise<void> }> {
  const queue = createInvitationMailQueue(options.config, options.logger);
  return startMailFlow({
    queue,
    enqueuer: invitationMailEnqueuer({
      store: options.store,
      pool: options.ownerPool,
      queue,
      logger: options.logger,
      leaseMs: options.config.PROCESSOR_LEASE_MS,
    }),
    ...(options.worker === false ? {} : { worker: invitationMailWorker(options) }),
    kind: 'invitation e-mail',
    logger: options.logger,
  });
}
