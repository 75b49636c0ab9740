import { createQueue, webhookDisabledMailQueueName, type Job, type Queue } from '@tokenvault/jobs';
import type { EventStore } from '@tokenvault/eventstore';
import { EventProcessor } from '@tokenvault/cqrs';
import type { Config, Logger, Pool } from '@tokenvault/platform';
import { loadDisabledWebhookMailFacts } from '@tokenvault/webhooks';
import { MailWorker, type MailConfig, type SendMail } from './mail-worker.ts';
import { renderWebhookDisabledEmail } from './render.ts';

/** What the disabled-webhook e-mails read of the configuration. */
export type WebhookDisabledMailConfig = MailConfig & Pick<Config, 'WEBHOOK_DISABLE_AFTER_FAILURES'>;

/**
 * Ids, the reason and the time only: the address (notify_email) is read from the webhook's stream
 * by the worker when it sends, never carried in Redis, as for invitations.
 */
export interface WebhookDisabledMailJob {
  tenant_id: string;
  webhook_id: string;
  /** The WebhookDisabled event's id: one e-mail per disabling. */
  event_id: string;
  reason: 'gone' | 'failing';
  disabled_at: string;
}

export function createWebhookDisabledMailQueue(config: MailConfig): Queue<WebhookDisabledMailJob> {
  return createQueue<WebhookDisabledMailJob>(webhookDisabledMailQueueName, config, {
    attempts: config.EMAIL_ATTEMPTS,
    backoff: { type: 'exponential', delay: config.EMAIL_BACKOFF_MS },
    // Kept a week after success (a month after failure) so a replayed enqueue is still a duplicate.
    removeOnComplete: { age: 7 * 24 * 3600 },
    removeOnFail: { age: 30 * 24 * 3600 },
  });
}

/** The enqueuer's row of projection_checkpoints. */
export const webhookDisabledMailEnqueuerName = 'webhook-disabled-mail-enqueuer';

/**
 * Turns WebhookDisabled events into e-mail jobs, from its own checkpoint, moved only after the
 * batch's jobs were added: a replay after a crash adds them again, and BullMQ drops a job whose id
 * (the event's) it has.
 */
export function webhookDisabledMailEnqueuer(options: {
  store: EventStore;
  /** The owner role: the checkpoint table. */
  pool: Pool;
  queue: Queue<WebhookDisabledMailJob>;
  logger: Logger;
  /** The processor's lease time (PROCESSOR_LEASE_MS); EventProcessor's default when absent. */
  leaseMs?: number;
}): EventProcessor {
  return new EventProcessor({
    name: webhookDisabledMailEnqueuerName,
    store: options.store,
    pool: options.pool,
    logger: options.logger,
    eventTypes: new Set(['WebhookDisabled']),
    batchWindowMs: 250,
    batchSize: 500,
    leaseMs: options.leaseMs,
    handler: {
      async handle(events) {
        await options.queue.addBulk(
          events.map((event) => {
            const data = event.data as Omit<WebhookDisabledMailJob, 'event_id'>;
            const job: WebhookDisabledMailJob = {
              tenant_id: data.tenant_id,
              webhook_id: data.webhook_id,
              event_id: event.event_id,
              reason: data.reason,
              disabled_at: data.disabled_at,
            };
            return { name: 'send', data: job, opts: { jobId: `webhook-disabled.${event.event_id}` } };
          }),
        );
      },
    },
  });
}

export type WebhookDisabledMailOutcome = 'sent' | 'nothing-to-tell';

/**
 * Sends the e-mails: a job whose webhook was deleted or enabled again meanwhile, or has no
 * notify_email, is skipped. Neither the address nor the webhook's URL (but its host) is logged or sent.
 */
export class WebhookDisabledMailWorker {
  private readonly mail: MailWorker<WebhookDisabledMailJob, WebhookDisabledMailOutcome>;
  private readonly options: { config: WebhookDisabledMailConfig; store: EventStore; logger: Logger };

  constructor(options: { config: WebhookDisabledMailConfig; store: EventStore; logger: Logger }) {
    this.options = options;
    this.mail = new MailWorker({
      queueName: webhookDisabledMailQueueName,
      kind: 'disabled-webhook e-mail',
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
    job: Job<WebhookDisabledMailJob, WebhookDisabledMailOutcome>,
    send: SendMail,
  ): Promise<WebhookDisabledMailOutcome> {
    const { config, store, logger } = this.options;
    const { tenant_id: tenantId, webhook_id: webhookId } = job.data;
    const facts = await loadDisabledWebhookMailFacts(store, tenantId, webhookId);
    if (!facts) {
      logger.info({ jobId: job.id }, 'disabled-webhook e-mail skipped: deleted, enabled again or no address');
      return 'nothing-to-tell';
    }
    const message = renderWebhookDisabledEmail({
      webhookName: facts.name,
      webhookId,
      urlHost: facts.urlHost,
      reason: job.data.reason,
      failuresInARow: config.WEBHOOK_DISABLE_AFTER_FAILURES,
      disabledAt: job.data.disabled_at,
    });
    await send({
      from: config.SMTP_FROM,
      to: facts.email,
      subject: message.subject,
      text: message.text,
      html: message.html,
      // The same Message-ID on every attempt: receivers can drop a duplicate.
      messageId: `<webhook-disabled.${job.data.event_id}@tokenvault>`,
    });
    logger.info({ jobId: job.id, attempt: job.attemptsMade + 1 }, 'disabled-webhook e-mail sent');
    return 'sent';
  }
}

/** The disabled-webhook e-mails in one piece: the enqueuer, the queue and the worker pool. */
export async function startWebhookDisabledMail(options: {
  config: WebhookDisabledMailConfig;
  store: EventStore;
  ownerPool: Pool;
  logger: Logger;
  /** The processor's lease time (PROCESSOR_LEASE_MS); EventProcessor's default when absent. */
  leaseMs?: number;
}): Promise<{ stop(): Promise<void> }> {
  const queue = createWebhookDisabledMailQueue(options.config);
  queue.on('error', (error) => options.logger.warn({ err: error }, 'disabled-webhook e-mail queue error'));
  const enqueuer = webhookDisabledMailEnqueuer({
    store: options.store,
    pool: options.ownerPool,
    queue,
    logger: options.logger,
    leaseMs: options.leaseMs,
  });
  const worker = new WebhookDisabledMailWorker(options);
  worker.start();
  await enqueuer.start();
  return {
    async stop() {
      await enqueuer.stop();
      await worker.close();
      await queue.close();
    },
  };
}
