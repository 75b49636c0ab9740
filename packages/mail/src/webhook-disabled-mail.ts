import { webhookDisabledMailQueueName, type Job, type Queue } from '@tokenvault/jobs';
import type { EventStore } from '@tokenvault/eventstore';
import type { Config, Logger, Pool } from '@tokenvault/platform';
import { loadDisabledWebhookMailFacts } from '@tokenvault/webhooks';
import { createMailQueue, mailEnqueuer, startMailFlow } from './mail-jobs.ts';
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

export const createWebhookDisabledMailQueue = (
  config: MailConfig,
  logger: Logger,
): Queue<WebhookDisabledMailJob> =>
  createMailQueue<WebhookDisabledMailJob>(webhookDisabledMailQueueName, config, logger, {
    daysAfterSuccess: 7,
    daysAfterFailure: 30,
  });

/** The enqueuer's row of projection_checkpoints. */
export const webhookDisabledMailEnqueuerName = 'webhook-disabled-mail-enqueuer';

/** Turns WebhookDisabled events into e-mail jobs, one per event. */
export function webhookDisabledMailEnqueuer(options: {
  store: EventStore;
  /** The owner role: the checkpoint table. */
  pool: Pool;
  queue: Queue<WebhookDisabledMailJob>;
  logger: Logger;
  /** The processor's lease time (PROCESSOR_LEASE_MS); EventProcessor's default when absent. */
  leaseMs?: number;
}) {
  return mailEnqueuer<WebhookDisabledMailJob>({
    ...options,
    name: webhookDisabledMailEnqueuerName,
    eventTypes: ['WebhookDisabled'],
    jobOf(event) {
      const data = event.data as Omit<WebhookDisabledMailJob, 'event_id'>;
      return {
        data: {
          tenant_id: data.tenant_id,
          webhook_id: data.webhook_id,
          event_id: event.event_id,
          reason: data.reason,
          disabled_at: data.disabled_at,
        },
        jobId: `webhook-disabled.${event.event_id}`,
      };
    },
  });
}

export type WebhookDisabledMailOutcome = 'sent' | 'nothing-to-tell';

interface WebhookDisabledMailOptions {
  config: WebhookDisabledMailConfig;
  store: EventStore;
  logger: Logger;
}

/**
 * The disabled-webhook e-mails' senders: a job whose webhook was deleted or enabled again
 * meanwhile, or has no notify_email, is skipped. Neither the address nor the webhook's URL (but
 * its host) is logged or sent.
 */
export function webhookDisabledMailWorker(
  options: WebhookDisabledMailOptions,
): MailWorker<WebhookDisabledMailJob, WebhookDisabledMailOutcome> {
  const { config, store, logger } = options;
  const process = async (
    job: Job<WebhookDisabledMailJob, WebhookDisabledMailOutcome>,
    send: SendMail,
  ): Promise<WebhookDisabledMailOutcome> => {
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
  };
  return new MailWorker({
    queueName: webhookDisabledMailQueueName,
    kind: 'disabled-webhook e-mail',
    config,
    logger,
    process,
  });
}

/** The disabled-webhook e-mails in one piece: the enqueuer, the queue and the senders. */
export function startWebhookDisabledMail(
  options: WebhookDisabledMailOptions & {
    ownerPool: Pool;
    /** The enqueuer's lease time comes from here too. */
    config: Pick<Config, 'PROCESSOR_LEASE_MS'>;
  },
): Promise<{ stop(): Promise<void> }> {
  const queue = createWebhookDisabledMailQueue(options.config, options.logger);
  return startMailFlow({
    queue,
    enqueuer: webhookDisabledMailEnqueuer({
      store: options.store,
      pool: options.ownerPool,
      queue,
      logger: options.logger,
      leaseMs: options.config.PROCESSOR_LEASE_MS,
    }),
    worker: webhookDisabledMailWorker(options),
    kind: 'disabled-webhook e-mail',
    logger: options.logger,
  });
}
