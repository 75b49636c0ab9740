import { createQueue, invitationMailQueueName, type Job, type Queue } from '@tokenvault/jobs';
import type { EventStore } from '@tokenvault/eventstore';
import type { Logger, Pool } from '@tokenvault/platform';
import { EventProcessor } from '@tokenvault/cqrs';
import type { Clock } from '@tokenvault/platform';
import { loadInvitationMailFacts, type InvitationLinks } from '@tokenvault/tenancy';
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

export function createInvitationMailQueue(config: MailConfig): Queue<InvitationMailJob> {
  return createQueue<InvitationMailJob>(invitationMailQueueName, config, {
    attempts: config.EMAIL_ATTEMPTS,
    backoff: { type: 'exponential', delay: config.EMAIL_BACKOFF_MS },
    // Kept a week after success (a month after failure) so a replayed enqueue is still a duplicate.
    removeOnComplete: { age: 7 * 24 * 3600 },
    removeOnFail: { age: 30 * 24 * 3600 },
  });
}

/** The enqueuer's row of projection_checkpoints. */
export const invitationMailEnqueuerName = 'invitation-mail-enqueuer';

export interface InvitationMailEnqueuerOptions {
  store: EventStore;
  /** The owner role: the checkpoint table. */
  pool: Pool;
  queue: Queue<InvitationMailJob>;
  logger: Logger;
  /** The processor's lease time (PROCESSOR_LEASE_MS); EventProcessor's default when absent. */
  leaseMs?: number;
}

/**
 * Turns InvitationCreated and InvitationResent events into e-mail jobs: a subscription of the
 * event store from a checkpoint kept in PostgreSQL (a row of projection_checkpoints), moved only
 * after the batch's jobs were added to the queue. A crash in between enqueues them again, and
 * BullMQ drops a job whose id it already has: at least once in, at most once per link out.
 */
export class InvitationMailEnqueuer {
  private readonly processor: EventProcessor;

  constructor(options: InvitationMailEnqueuerOptions) {
    this.processor = new EventProcessor({
      name: invitationMailEnqueuerName,
      store: options.store,
      pool: options.pool,
      logger: options.logger,
      // Every stream (with a stream filter, a subscription with nothing to enqueue never moves
      // its checkpoint and reads the whole log again at every poll), but only these events reach
      // the handler: the others cost no transaction each.
      eventTypes: new Set(['InvitationCreated', 'InvitationResent']),
      // An e-mail may leave a quarter of a second later; the log is read a few times a second
      // instead of after every append.
      batchWindowMs: 250,
      batchSize: 500,
      leaseMs: options.leaseMs,
      handler: {
        async handle(events) {
          const jobs = events.map((event) => {
            const data = event.data as { tenant_id: string; invitation_id: string; link_version: number };
            const job: InvitationMailJob = {
              tenant_id: data.tenant_id,
              invitation_id: data.invitation_id,
              link_version: data.link_version,
            };
            return { name: 'send', data: job, opts: { jobId: invitationMailJobId(job) } };
          });
          // Added before the checkpoint moves; added again after a crash, and dropped by BullMQ
          // then (the job id is already there).
          await options.queue.addBulk(jobs);
        },
      },
    });
  }

  start(): Promise<void> {
    return this.processor.start();
  }

  stop(): Promise<void> {
    return this.processor.stop();
  }
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
 * The pool of e-mail senders: each job reads the invitation from its event stream, skips it when
 * it is gone, its link was replaced or it expired, and otherwise derives the link token, renders
 * the message (text and HTML) and sends it over SMTP. A failed send is retried with exponential
 * backoff. close() waits for the jobs in flight. Neither the token nor the link is ever logged.
 */
export class InvitationMailWorker {
  private readonly mail: MailWorker<InvitationMailJob, MailOutcome>;
  private readonly options: InvitationMailWorkerOptions;

  constructor(options: InvitationMailWorkerOptions) {
    this.options = options;
    this.mail = new MailWorker({
      queueName: invitationMailQueueName,
      kind: 'invitation e-mail',
      config: options.config,
      logger: options.logger,
      process: (job, send) => this.process(job, send),
    });
  }

  start(): void {
    this.mail.start();
  }

  /** Waits for the jobs in flight to finish; nothing new is taken. */
  close(): Promise<void> {
    return this.mail.close();
  }

  private async process(job: Job<InvitationMailJob, MailOutcome>, send: SendMail): Promise<MailOutcome> {
    const { config, store, appPool, links, clock, logger } = this.options;
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
  }
}

/** The e-mail side of invitations in one piece: the enqueuer, the queue and the worker pool. */
export async function startInvitationMail(options: {
  config: MailConfig;
  store: EventStore;
  ownerPool: Pool;
  appPool: Pool;
  links: InvitationLinks;
  clock: Clock;
  logger: Logger;
  /** Default true: a process may run the enqueuer alone. */
  worker?: boolean;
  /** The processor's lease time (PROCESSOR_LEASE_MS); EventProcessor's default when absent. */
  leaseMs?: number;
}): Promise<{ stop(): Promise<void> }> {
  const queue = createInvitationMailQueue(options.config);
  queue.on('error', (error) => options.logger.warn({ err: error }, 'invitation e-mail queue error'));
  const enqueuer = new InvitationMailEnqueuer({
    store: options.store,
    pool: options.ownerPool,
    queue,
    logger: options.logger,
    leaseMs: options.leaseMs,
  });
  const worker = options.worker === false ? undefined : new InvitationMailWorker(options);
  worker?.start();
  await enqueuer.start();
  return {
    async stop() {
      await enqueuer.stop();
      await worker?.close();
      await queue.close();
    },
  };
}
