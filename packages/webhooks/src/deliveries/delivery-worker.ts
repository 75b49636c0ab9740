import { readFileSync } from 'node:fs';
import { rootCertificates } from 'node:tls';
import { webhookPingEventType } from '@tokenvault/contracts';
import {
  AddressAllowlist,
  DestinationConnections,
  resolveDestination,
  sendToDestination,
  systemResolver,
  type Destination,
  type Resolver,
  type SendLimits,
} from '@tokenvault/destinations';
import { createWorker, webhookDeliveryQueueName, type Job, type Queue, type Worker } from '@tokenvault/jobs';
import {
  failedJobOutcome,
  Problem,
  queueJobsTotal,
  startPeriodicTask,
  type Clock,
  type Logger,
  type Pool,
} from '@tokenvault/platform';
import type { SigningKeyCommands } from '../commands/signing-key.commands.ts';
import type { WebhookCommands } from '../commands/webhooks.commands.ts';
import {
  deliveryBackoffMs,
  deliveryBody,
  isDrainJob,
  webhookDrainJobName,
  type WebhookDeliveryConfig,
  type WebhookDeliveryJob,
  type WebhookDrainJob,
  type WebhookQueueJob,
} from './delivery-job.ts';
import { signatureHeaders } from './signature.ts';
import { signingKeysOfTenant } from '../projections/signing-key-notice.ts';

const signingKeysPrefix = signingKeysOfTenant('');
const tenantOfSigningKeysInvalidation = (key: string) =>
  key.startsWith(signingKeysPrefix) ? key.slice(signingKeysPrefix.length) : undefined;

/** How one job ended (a failed attempt of a single delivery throws, for BullMQ to retry it). */
export type DeliveryOutcome = 'succeeded' | 'gone' | 'skipped' | 'drained';

/** What one attempt came to, as the history keeps it: never a body, never an address. */
interface Attempt {
  status: 'succeeded' | 'retrying' | 'failed' | 'gone';
  responseStatus: number | null;
  error: string | null;
}

export interface WebhookDeliveryWorkerOptions {
  config: WebhookDeliveryConfig;
  /** The queue its jobs are on: a drain queues the next turn of its webhook (a retry, a sweep). */
  queue: Pick<Queue<WebhookQueueJob>, 'add' | 'addBulk'>;
  /** The owner role: the subscriptions' copy and the history. */
  ownerPool: Pool;
  signingKeys: Pick<SigningKeyCommands, 'signingSecrets'>;
  /** Disables a webhook whose receiver is gone (410) or keeps failing. */
  webhooks: Pick<WebhookCommands, 'disable'>;
  clock: Clock;
  logger: Logger;
  /** How receiver names are resolved (tests give their own). */
  resolver?: Resolver;
  /**
   * Where the process hears of stale caches (ReadModelConsistency): a rotation drops the tenant's
   * kept secrets at once, so the new secret signs from the next attempt on.
   */
  onInvalidation?: (listener: (key: string | null) => void) => void;
}

/**
 * The senders of webhook deliveries. A webhook's deliveries from the log are sent by a drain, one
 * webhook at a time each (a lease on its subscription row), in order, many per turn over one
 * kept-alive connection; pings and redeliveries are single jobs, sent at once. Each attempt reads the webhook's URL from the enqueuer's copy
 * of the subscriptions (a deleted webhook gets nothing more, a disabled one nothing but pings),
 * resolves its name once and checks every address against the destination rules, connects to the
 * address checked (a rebinding answer never matters), follows no redirect, reads at most
 * WEBHOOK_MAX_RESPONSE_BYTES within WEBHOOK_TIMEOUT_MS, and records the outcome in the history.
 * A 2xx ends the delivery; any other answer or failure is retried with backoff and jitter.
 */
export class WebhookDeliveryWorker {
  private readonly worker: Worker<WebhookQueueJob, DeliveryOutcome>;
  private readonly signingSecretsByTenant = new Map<
    string,
    { fetchedAt: number; keys: Promise<{ secret: string; validUntilMs: number }[]> }
  >();
  private sweep: { stop(): Promise<void> } | undefined;
  private readonly options: WebhookDeliveryWorkerOptions;
  private readonly connections = new DestinationConnections({
    maxPools: 256,
    maxIdleSocketsPerPool: 4,
    idleTimeoutMs: 30_000,
  });
  private readonly allowlist: AddressAllowlist;
  private readonly limits: SendLimits;

  constructor(options: WebhookDeliveryWorkerOptions) {
    this.options = options;
    const { config, logger } = options;
    this.allowlist = new AddressAllowlist(
      config.WEBHOOK_ALLOWED_PRIVATE_ADDRESSES,
      'WEBHOOK_ALLOWED_PRIVATE_ADDRESSES',
    );
    this.limits = {
      timeoutMs: config.WEBHOOK_TIMEOUT_MS,
      maxResponseBytes: config.WEBHOOK_MAX_RESPONSE_BYTES,
      ...(config.WEBHOOK_CA_FILE
        ? { ca: [...rootCertificates, readFileSync(config.WEBHOOK_CA_FILE, 'utf8')] }
        : {}),
    };
    this.worker = createWorker<WebhookQueueJob, DeliveryOutcome>(
      webhookDeliveryQueueName,
      config,
      (job, token) => this.process(job, token),
      {
        concurrency: config.WORKER_CONCURRENCY,
        // A sender that dies mid-delivery (its lock, renewed every half of it, stops) has its
        // delivery taken up again within about WEBHOOK_DELIVERY_LOCK_MS: at least once, never lost.
        lockDuration: config.WEBHOOK_DELIVERY_LOCK_MS,
        stalledInterval: config.WEBHOOK_DELIVERY_LOCK_MS,
        settings: {
          backoffStrategy: (attemptsMade) => deliveryBackoffMs(attemptsMade, config.WEBHOOK_BACKOFF_MS),
        },
      },
      logger,
    );
    this.worker.on('completed', () =>
      queueJobsTotal.inc({ queue: webhookDeliveryQueueName, outcome: 'completed' }),
    );
    this.worker.on('failed', (job) => {
      queueJobsTotal.inc({ queue: webhookDeliveryQueueName, outcome: failedJobOutcome(job) });
    });
    options.onInvalidation?.((key) => {
      if (key === null) return this.signingSecretsByTenant.clear();
      const tenantId = tenantOfSigningKeysInvalidation(key);
      if (tenantId) this.signingSecretsByTenant.delete(tenantId);
    });
  }

  start(): void {
    this.sweep = startPeriodicTask({
      run: () => this.sweepDueDeliveries(),
      intervalMs: this.options.config.WEBHOOK_SWEEP_INTERVAL_MS,
      onError: (error) => this.options.logger.warn({ err: error }, 'webhook delivery sweep failed'),
    });
    void this.worker
      .run()
      .catch((error: unknown) =>
        this.options.logger.error({ err: error }, 'webhook delivery worker stopped'),
      );
  }

  /** Waits for the deliveries in flight; nothing new is taken. */
  async close(): Promise<void> {
    await this.sweep?.stop();
    await this.worker.close();
    this.connections.close();
  }

  private async process(
    job: Job<WebhookQueueJob, DeliveryOutcome>,
    _token: string | undefined,
  ): Promise<DeliveryOutcome> {
    const data = job.data;
    if (isDrainJob(data)) return this.drain(data);
    return this.sendOne(job as Job<WebhookDeliveryJob, DeliveryOutcome>);
  }

  /** A ping or a redelivery: sent at once, outside the order, retried by BullMQ. */
  private async sendOne(job: Job<WebhookDeliveryJob, DeliveryOutcome>): Promise<DeliveryOutcome> {
    const { clock, logger } = this.options;
    const delivery = job.data;
    const webhook = await this.subscription(delivery);
    if (
      webhook.status === 'deleted' ||
      (webhook.status !== 'enabled' && delivery.type !== webhookPingEventType)
    ) {
      logger.info({ jobId: job.id }, 'webhook delivery skipped: the webhook is deleted or disabled');
      await this.finishedLegacy(delivery);
      return 'skipped';
    }
    const attempt = job.attemptsMade + 1;
    const last = attempt >= (job.opts.attempts ?? 1);
    const outcome = await this.attempt(
      delivery,
      this.resolve(webhook.url),
      await this.secrets(delivery.tenant_id),
    );
    const recorded: Attempt =
      outcome.status === 'succeeded' || outcome.status === 'gone' || !last
        ? outcome
        : { ...outcome, status: 'failed' };
    await this.record([{ delivery, attempt, outcome: recorded }], clock.now());
    logger.info(
      { jobId: job.id, attempt, status: recorded.status, responseStatus: recorded.responseStatus },
      'webhook delivery attempted',
    );
    await this.disableIfDue(delivery, recorded);
    if (recorded.status !== 'retrying') await this.finishedLegacy(delivery);
    if (recorded.status === 'succeeded' || recorded.status === 'gone') return recorded.status;
    throw new Error(`webhook delivery failed: ${recorded.error ?? `answered ${recorded.responseStatus}`}`);
  }

  /**
   * A job of the design before drains carries its sequence and has its own pending row (without
   * the delivery): it is sent as it comes, and its row goes when it ends.
   */
  private async finishedLegacy(delivery: WebhookDeliveryJob): Promise<void> {
    if (delivery.sequence === undefined) return;
    await this.options.ownerPool.query(
      'DELETE FROM webhook_pending_deliveries WHERE tenant_id = $1 AND webhook_id = $2 AND sequence = $3',
      [delivery.tenant_id, delivery.webhook_id, delivery.sequence],
    );
  }

  /** A 410 disables the webhook at once; WEBHOOK_DISABLE_AFTER_FAILURES failed deliveries in a row too. */
  private async disableIfDue(delivery: WebhookDeliveryJob, recorded: Attempt): Promise<boolean> {
    if (recorded.status === 'gone') {
      await this.options.webhooks.disable(delivery.tenant_id, delivery.webhook_id, 'gone');
      return true;
    }
    if (recorded.status === 'failed' && (await this.failingInARow(delivery))) {
      await this.options.webhooks.disable(delivery.tenant_id, delivery.webhook_id, 'failing');
      return true;
    }
    return false;
  }

  /**
   * One turn at a webhook's pending deliveries. Taken under the webhook's lease, let go, and then
   * looked at again: a drain that found the lease held left its deliveries to the holder, and
   * the holder sees them either before letting go or in this last look.
   */
  private async drain(drain: WebhookDrainJob): Promise<DeliveryOutcome> {
    if (!(await this.recorded(drain))) return 'skipped';
    for (;;) {
      const until = await this.takeLease(drain);
      if (!until) return 'skipped';
      const lease = { until };
      let more: boolean;
      try {
        more = await this.sendPending(drain, lease);
      } finally {
        await this.options.ownerPool.query(
          `UPDATE webhook_delivery_subscriptions SET drain_lease_until = NULL
             WHERE tenant_id = $1 AND webhook_id = $2 AND drain_lease_until = $3::timestamptz`,
          [drain.tenant_id, drain.webhook_id, lease.until],
        );
      }
      if (!more || !(await this.headDue(drain))) return 'drained';
    }
  }

  /**
   * The enqueuer queues a drain just before its batch commits: the drain waits a little for the
   * batch's numbers to be readable. When they are not (the batch rolled back), the sweep has it.
   */
  private async recorded(drain: WebhookDrainJob): Promise<boolean> {
    for (let wait = 0; wait < 200; wait++) {
      const result = await this.options.ownerPool.query<{ last_sequence: string }>(
        'SELECT last_sequence FROM webhook_delivery_subscriptions WHERE tenant_id = $1 AND webhook_id = $2',
        [drain.tenant_id, drain.webhook_id],
      );
      const row = result.rows[0];
      if (row && Number(row.last_sequence) >= drain.through_sequence) return true;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return false;
  }

  /** The webhook's lease until WEBHOOK_DELIVERY_LOCK_MS from now, unless another drain holds it. */
  private async takeLease(drain: WebhookDrainJob): Promise<string | undefined> {
    const result = await this.options.ownerPool.query<{ until: string }>(
      `UPDATE webhook_delivery_subscriptions
         SET drain_lease_until = now() + make_interval(secs => $3::float8 / 1000)
         WHERE tenant_id = $1 AND webhook_id = $2
           AND (drain_lease_until IS NULL OR drain_lease_until < now())
         RETURNING drain_lease_until::text AS until`,
      [drain.tenant_id, drain.webhook_id, this.options.config.WEBHOOK_DELIVERY_LOCK_MS],
    );
    return result.rows[0]?.until;
  }

  /** The lease, renewed; undefined when it ran out and another drain took it. */
  private async renewLease(drain: WebhookDrainJob, lease: string): Promise<string | undefined> {
    const result = await this.options.ownerPool.query<{ until: string }>(
      `UPDATE webhook_delivery_subscriptions
         SET drain_lease_until = now() + make_interval(secs => $4::float8 / 1000)
         WHERE tenant_id = $1 AND webhook_id = $2 AND drain_lease_until = $3::timestamptz
         RETURNING drain_lease_until::text AS until`,
      [drain.tenant_id, drain.webhook_id, lease, this.options.config.WEBHOOK_DELIVERY_LOCK_MS],
    );
    return result.rows[0]?.until;
  }

  /** The webhook's first pending delivery is due (not waiting for a retry). */
  private async headDue(drain: Pick<WebhookDrainJob, 'tenant_id' | 'webhook_id'>): Promise<boolean> {
    const head = await this.options.ownerPool.query<{ due: boolean }>(
      `SELECT next_attempt_at <= now() AS due FROM webhook_pending_deliveries
         WHERE tenant_id = $1 AND webhook_id = $2 ORDER BY sequence LIMIT 1`,
      [drain.tenant_id, drain.webhook_id],
    );
    return head.rows[0]?.due ?? false;
  }

  /**
   * Sends the webhook's pending deliveries in order while each succeeds (or ends), recording
   * their outcomes a batch at a time. Stops at a delivery to be retried (its next attempt noted
   * on its row, a drain queued for then), when the webhook is disabled, or when none is left.
   * True when it stopped for none of those (the lease ran out): the caller looks again.
   */
  private async sendPending(drain: WebhookDrainJob, lease: { until: string }): Promise<boolean> {
    const { ownerPool, clock, logger, config } = this.options;
    const { tenant_id: tenantId, webhook_id: webhookId } = drain;
    for (;;) {
      const startedAt = Date.now();
      const subscription = await ownerPool.query<{ url: string; status: string }>(
        'SELECT url, status FROM webhook_delivery_subscriptions WHERE tenant_id = $1 AND webhook_id = $2',
        [tenantId, webhookId],
      );
      const webhook = subscription.rows[0];
      if (!webhook) return false;
      if (webhook.status !== 'enabled') {
        // Deleted or disabled: its pending deliveries are skipped (no history, as before).
        await ownerPool.query(
          'DELETE FROM webhook_pending_deliveries WHERE tenant_id = $1 AND webhook_id = $2 AND delivery IS NOT NULL',
          [tenantId, webhookId],
        );
        return false;
      }
      const pending = await ownerPool.query<{
        sequence: string;
        delivery: WebhookDeliveryJob | null;
        attempts: number;
        due: boolean;
      }>(
        `SELECT sequence, delivery, attempts, next_attempt_at <= now() AS due FROM webhook_pending_deliveries
           WHERE tenant_id = $1 AND webhook_id = $2 ORDER BY sequence LIMIT $3`,
        [tenantId, webhookId, config.WEBHOOK_DRAIN_BATCH_SIZE],
      );
      const head = pending.rows[0];
      // None left; or the first waits for its retry, or is an earlier design's job's (sent by it).
      if (!head || !head.due || !head.delivery) return false;
      const secrets = await this.secrets(tenantId);
      // Resolved and checked once for the turn (at most WEBHOOK_DRAIN_BATCH_SIZE deliveries, a few seconds),
      // and every delivery of it connects to that address.
      const checked = this.resolve(webhook.url);
      checked.catch(() => {}); // its refusal is each attempt's outcome
      const ended: { delivery: WebhookDeliveryJob; attempt: number; outcome: Attempt }[] = [];
      let retry: { delivery: WebhookDeliveryJob; attempt: number; outcome: Attempt } | undefined;
      for (const row of pending.rows) {
        if (!row.delivery || !row.due) break;
        const attempt = row.attempts + 1;
        const outcome = await this.attempt(row.delivery, checked, secrets);
        const recorded: Attempt =
          outcome.status !== 'retrying' || attempt < config.WEBHOOK_ATTEMPTS
            ? outcome
            : { ...outcome, status: 'failed' };
        if (recorded.status === 'retrying') {
          retry = { delivery: row.delivery, attempt, outcome: recorded };
          break;
        }
        ended.push({ delivery: row.delivery, attempt, outcome: recorded });
        // A 410 or a failed delivery may disable the webhook: that is decided before going on.
        if (recorded.status !== 'succeeded') break;
        // The lease is renewed well before it runs out (a slow receiver, many deliveries).
        if (Date.now() - startedAt > config.WEBHOOK_DELIVERY_LOCK_MS / 3) break;
      }
      const now = clock.now();
      await this.record(retry ? [...ended, retry] : ended, now);
      await ownerPool.query(
        `DELETE FROM webhook_pending_deliveries WHERE tenant_id = $1 AND webhook_id = $2
           AND sequence = ANY($3::bigint[])`,
        [tenantId, webhookId, ended.map(({ delivery }) => delivery.sequence)],
      );
      logger.info(
        { webhookId, sent: ended.length, retrying: retry !== undefined },
        'webhook deliveries attempted',
      );
      for (const { delivery, outcome } of ended) {
        if (outcome.status !== 'succeeded' && (await this.disableIfDue(delivery, outcome))) return false;
      }
      if (retry) {
        await this.retryLater(retry.delivery, retry.attempt);
        return false;
      }
      const renewed = await this.renewLease(drain, lease.until);
      if (!renewed) return true;
      lease.until = renewed;
    }
  }

  /** The head failed an attempt: its row notes the next one, and a drain is queued for then. */
  private async retryLater(delivery: WebhookDeliveryJob, attempt: number): Promise<void> {
    const delayMs = deliveryBackoffMs(attempt, this.options.config.WEBHOOK_BACKOFF_MS);
    await this.options.ownerPool.query(
      `UPDATE webhook_pending_deliveries
         SET attempts = $4, next_attempt_at = now() + make_interval(secs => $5::float8 / 1000)
         WHERE tenant_id = $1 AND webhook_id = $2 AND sequence = $3`,
      [delivery.tenant_id, delivery.webhook_id, delivery.sequence, attempt, delayMs],
    );
    const drain: WebhookDrainJob = {
      kind: 'drain',
      tenant_id: delivery.tenant_id,
      webhook_id: delivery.webhook_id,
      through_sequence: 0,
    };
    await this.options.queue.add(webhookDrainJobName, drain, {
      jobId: `drain.${delivery.webhook_id}.retry.${delivery.sequence}.${attempt}`,
      delay: delayMs,
      attempts: 1,
      removeOnComplete: true,
      removeOnFail: true,
    });
  }

  /** A drain for each webhook with a delivery due and no drain holding it (the sweep). */
  private async sweepDueDeliveries(): Promise<void> {
    const due = await this.options.ownerPool.query<{ tenant_id: string; webhook_id: string }>(
      `SELECT DISTINCT p.tenant_id, p.webhook_id
         FROM webhook_pending_deliveries p JOIN webhook_delivery_subscriptions s USING (tenant_id, webhook_id)
         WHERE p.next_attempt_at <= now() AND p.delivery IS NOT NULL
           AND (s.drain_lease_until IS NULL OR s.drain_lease_until < now())`,
    );
    if (due.rows.length === 0) return;
    // One sweep's drains per second, whichever sender sweeps.
    const second = Math.floor(Date.now() / 1000);
    await this.options.queue.addBulk(
      due.rows.map((row) => ({
        name: webhookDrainJobName,
        data: { kind: 'drain', ...row, through_sequence: 0 } satisfies WebhookDrainJob,
        opts: {
          jobId: `drain.${row.webhook_id}.sweep.${second}`,
          attempts: 1,
          removeOnComplete: true,
          removeOnFail: true,
        },
      })),
    );
  }

  /**
   * The tenant's signing secrets, kept a few seconds rather than read from its stream and opened
   * at each attempt. A rotation's new secret is picked up within that time; the replaced one keeps
   * signing for the overlap (a day by default), and is dropped at its end whatever the cache holds.
   */
  private async secrets(tenantId: string): Promise<string[]> {
    const now = Date.now();
    let cached = this.signingSecretsByTenant.get(tenantId);
    if (!cached || now - cached.fetchedAt > this.options.config.WEBHOOK_SIGNING_SECRETS_CACHE_MS) {
      cached = { fetchedAt: now, keys: this.options.signingKeys.signingSecrets(tenantId) };
      this.signingSecretsByTenant.set(tenantId, cached);
      if (this.signingSecretsByTenant.size > 10_000) {
        const oldest = this.signingSecretsByTenant.keys().next().value;
        if (oldest !== undefined) this.signingSecretsByTenant.delete(oldest);
      }
    }
    try {
      const keys = await cached.keys;
      // None yet (the tenant's first key is being made): looked up again at the next attempt.
      if (keys.length === 0) this.signingSecretsByTenant.delete(tenantId);
      const at = this.options.clock.now().getTime();
      return keys.filter((key) => key.validUntilMs > at).map((key) => key.secret);
    } catch (error) {
      this.signingSecretsByTenant.delete(tenantId);
      throw error;
    }
  }

  /**
   * The webhook as the enqueuer's copy has it. The enqueuer queues a batch's jobs just before its
   * transaction commits, so a webhook created in that batch, or the batch's numbering of its
   * deliveries (which the order rests on), may not be readable yet: it is waited for a little, and
   * then the attempt fails (and is retried), since skipping it would lose it.
   */
  private async subscription(delivery: WebhookDeliveryJob): Promise<{ url: string; status: string }> {
    for (let wait = 0; ; wait++) {
      const result = await this.options.ownerPool.query<{
        url: string;
        status: string;
        last_sequence: string;
      }>(
        `SELECT url, status, last_sequence FROM webhook_delivery_subscriptions
           WHERE tenant_id = $1 AND webhook_id = $2`,
        [delivery.tenant_id, delivery.webhook_id],
      );
      const row = result.rows[0];
      if (row && (delivery.sequence === undefined || Number(row.last_sequence) >= delivery.sequence))
        return row;
      if (wait === 20) throw new Error('the webhook is not recorded yet: the delivery is retried');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** One signed POST to the checked address. */
  /** The receiver's address, checked: resolved once for one delivery, or for one turn of a drain. */
  private resolve(url: string): Promise<Destination> {
    return resolveDestination(
      new URL(url),
      { allowlist: this.allowlist, resolver: this.options.resolver ?? systemResolver },
      'url',
    );
  }

  /** One signed POST to the checked address (a refused one is the attempt's failure). */
  private async attempt(
    delivery: WebhookDeliveryJob,
    checked: Promise<Destination>,
    secrets: string[],
  ): Promise<Attempt> {
    if (secrets.length === 0) return { status: 'retrying', responseStatus: null, error: 'No signing key' };
    const body = deliveryBody(delivery);
    const timestamp = Math.floor(this.options.clock.now().getTime() / 1000);
    try {
      const destination = await checked;
      const response = await sendToDestination(
        destination,
        {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'user-agent': 'tokenvault-webhooks',
            ...signatureHeaders(secrets, delivery.delivery_id, timestamp, body),
          },
          body: Buffer.from(body),
        },
        this.limits,
        this.connections.poolFor(delivery.tenant_id, destination),
      );
      if (response.status >= 200 && response.status < 300) {
        return { status: 'succeeded', responseStatus: response.status, error: null };
      }
      if (response.status === 410) return { status: 'gone', responseStatus: 410, error: null };
      return { status: 'retrying', responseStatus: response.status, error: null };
    } catch (error) {
      // The destination rules' refusals and the sender's failures name no address.
      const reason =
        error instanceof Problem
          ? [error.detail, ...Object.values(error.errors ?? {}).flat()].filter(Boolean).join(' ')
          : 'The receiver could not be reached.';
      return { status: 'retrying', responseStatus: null, error: reason };
    }
  }

  /** The webhook's last WEBHOOK_DISABLE_AFTER_FAILURES deliveries all failed every attempt. */
  private async failingInARow(delivery: WebhookDeliveryJob): Promise<boolean> {
    const limit = this.options.config.WEBHOOK_DISABLE_AFTER_FAILURES;
    const last = await this.options.ownerPool.query<{ status: string }>(
      `SELECT status FROM webhook_deliveries WHERE tenant_id = $1 AND webhook_id = $2
         ORDER BY last_attempt_at DESC LIMIT $3`,
      [delivery.tenant_id, delivery.webhook_id, limit],
    );
    return last.rows.length === limit && last.rows.every((row) => row.status === 'failed');
  }

  /** The outcomes in the history, in one statement, and the history's old rows out. */
  private async record(
    attempts: readonly { delivery: WebhookDeliveryJob; attempt: number; outcome: Attempt }[],
    now: Date,
  ) {
    if (attempts.length === 0) return;
    const { tenant_id: tenantId, webhook_id: webhookId } = attempts[0]!.delivery;
    await this.options.ownerPool.query(
      `INSERT INTO webhook_deliveries (tenant_id, webhook_id, id, event_id, event_type, status, attempts,
                                       response_status, error, delivery, created_at, last_attempt_at)
         SELECT $1, $2, a.id, a.event_id, a.event_type, a.status, a.attempts, a.response_status, a.error,
                a.delivery, $3, $3
           FROM unnest($4::text[], $5::text[], $6::text[], $7::text[], $8::int[], $9::int[], $10::text[],
                       $11::jsonb[]) AS a(id, event_id, event_type, status, attempts, response_status, error, delivery)
         ON CONFLICT (tenant_id, webhook_id, id) DO UPDATE SET status = excluded.status,
           attempts = excluded.attempts, response_status = excluded.response_status,
           error = excluded.error, delivery = excluded.delivery, last_attempt_at = excluded.last_attempt_at`,
      [
        tenantId,
        webhookId,
        now,
        attempts.map(({ delivery }) => delivery.delivery_id),
        attempts.map(({ delivery }) => delivery.event_id),
        attempts.map(({ delivery }) => delivery.type),
        attempts.map(({ outcome }) => outcome.status),
        attempts.map(({ attempt }) => attempt),
        attempts.map(({ outcome }) => outcome.responseStatus),
        attempts.map(({ outcome }) => outcome.error),
        attempts.map(({ delivery }) => JSON.stringify(delivery)),
      ],
    );
    // The history is bounded: this webhook's deliveries past WEBHOOK_HISTORY_DAYS go as it grows.
    await this.options.ownerPool.query(
      `DELETE FROM webhook_deliveries WHERE tenant_id = $1 AND webhook_id = $2
         AND created_at < $3::timestamptz - make_interval(days => $4)`,
      [tenantId, webhookId, now, this.options.config.WEBHOOK_HISTORY_DAYS],
    );
  }
}
