import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publicEvents, type WebhookEventType } from '@tokenvault/contracts';
import { testPrincipal, useReadSide } from '@tokenvault/cqrs/testing';
import type { EventProcessor } from '@tokenvault/cqrs';
import { AddressAllowlist } from '@tokenvault/destinations';
import { obliterateQueues, type Queue } from '@tokenvault/jobs';
import { createLogger, systemClock } from '@tokenvault/platform';
import { eventually } from '@tokenvault/platform/testing';
import { LocalKeyring, Vault, vaultMigrations } from '@tokenvault/vault';
import { SigningKeyCommands } from '../commands/signing-key.commands.ts';
import { WebhookCommands } from '../commands/webhooks.commands.ts';
import { streams as webhooksStreams } from '../domain/webhooks.events.ts';
import { webhooksMigrations } from '../migrations.ts';
import { webhooksProjection } from '../projections/webhooks.projection.ts';
import { WebhookQueries } from '../queries/webhooks.queries.ts';
import {
  createWebhookDeliveryQueue,
  enqueueDeliveries,
  redeliver,
  type WebhookDeliveryConfig,
  type WebhookDeliveryJob,
  type WebhookQueueJob,
} from './delivery-job.ts';
import { webhookDeliveryEnqueuer } from './delivery-enqueuer.ts';
import { WebhookDeliveryWorker } from './delivery-worker.ts';
import { signatureHeaders } from './signature.ts';

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

const tenant = randomUUID();
const otherTenant = randomUUID();
// What subscribing to each event type needs (subscriptionNotHeld).
const eventReads = ['token:read', 'application:read', 'reactor:read', 'proxy:read'];
const admin = testPrincipal(tenant, randomUUID(), ['webhook:create', 'webhook:update', ...eventReads]);
const otherAdmin = testPrincipal(otherTenant, randomUUID(), [
  'webhook:create',
  'webhook:update',
  ...eventReads,
]);

describe('webhook deliveries: the enqueuer on the event log, the worker to a receiver on loopback', () => {
  const side = useReadSide([...vaultMigrations, ...webhooksMigrations], [webhooksProjection]);
  const config: WebhookDeliveryConfig = {
    REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    QUEUE_PREFIX: `test-webhook-deliveries-${randomUUID()}`,
    WORKER_CONCURRENCY: 4,
    // The receiver below is on loopback: admitted like an operator's internal receiver.
    WEBHOOK_ALLOWED_PRIVATE_ADDRESSES: '127.0.0.1',
    WEBHOOK_TIMEOUT_MS: 5_000,
    WEBHOOK_MAX_RESPONSE_BYTES: 4_096,
    WEBHOOK_ATTEMPTS: 3,
    WEBHOOK_BACKOFF_MS: 50,
    WEBHOOK_DISABLE_AFTER_FAILURES: 2,
    WEBHOOK_HISTORY_DAYS: 30,
    WEBHOOK_SIGNING_KEY_OVERLAP_SECONDS: 24 * 3600,
    WEBHOOK_SWEEP_INTERVAL_MS: 1_000,
    WEBHOOK_DRAIN_BATCH_SIZE: 100,
    WEBHOOK_SIGNING_SECRETS_CACHE_MS: 5_000,
    WEBHOOK_DELIVERY_LOCK_MS: 10_000,
  };
  const received: Received[] = [];
  /** Status answers per path, taken in turn (the last one repeats); 200 by default. */
  const answers = new Map<string, number[]>();
  let server: Server;
  let base: string;
  let queue: Queue<WebhookQueueJob>;
  let enqueuer: EventProcessor;
  let worker: WebhookDeliveryWorker;
  let webhooks: WebhookCommands;
  let signingKeys: SigningKeyCommands;

  beforeAll(async () => {
    server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const path = request.url ?? '';
        received.push({ path, headers: request.headers, body: Buffer.concat(chunks).toString('utf8') });
        const queued = answers.get(path) ?? [200];
        response.statusCode = queued.length > 1 ? queued.shift()! : queued[0]!;
        response.end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const { store, ownerPool } = side;
    const vault = new Vault(ownerPool, new LocalKeyring([['default', randomBytes(32).toString('base64')]]));
    for (const tenantId of [tenant, otherTenant]) await vault.createTenantKeys(tenantId);
    signingKeys = new SigningKeyCommands({
      store,
      clock: systemClock,
      vault,
      signingKeyOverlapSeconds: config.WEBHOOK_SIGNING_KEY_OVERLAP_SECONDS,
    });
    webhooks = new WebhookCommands({
      store,
      clock: systemClock,
      webhookAllowlist: new AddressAllowlist(config.WEBHOOK_ALLOWED_PRIVATE_ADDRESSES),
    });
    const logger = createLogger(process.env.DEBUG_WEBHOOK_SPEC ? 'info' : 'silent');
    queue = createWebhookDeliveryQueue(config, logger);
    enqueuer = webhookDeliveryEnqueuer({ store, pool: ownerPool, queue, logger });
    worker = new WebhookDeliveryWorker({
      config,
      queue,
      ownerPool,
      signingKeys,
      webhooks,
      clock: systemClock,
      logger,
    });
    worker.start();
    await enqueuer.start();
    await enqueuer.ready();
  });

  afterAll(async () => {
    await enqueuer?.stop();
    await worker?.close();
    await queue?.close();
    await obliterateQueues(config);
    await new Promise((resolve) => server?.close(resolve));
  });

  const subscribe = async (
    path: string,
    events: WebhookEventType[] = ['token:created'],
    principal = admin,
  ) => {
    await signingKeys.ensure(principal, randomUUID());
    const { row } = await webhooks.create(
      principal,
      { name: path, url: `${base}${path}`, events, status: 'enabled' },
      randomUUID(),
    );
    return row.id;
  };

  /** A token's creation as the tokens context appends it: its sealed data and fingerprint included. */
  const tokenCreated = async (tenantId = tenant) => {
    const data = {
      token_id: randomUUID(),
      tenant_id: tenantId,
      type: 'card',
      data_ciphertext: 'k1:SEALED-CARD-NUMBER',
      containers: ['/pci/high/'],
      metadata: { customer: 'jane@example.com' },
      fingerprint: 'FINGERPRINT-OF-THE-CARD',
      created_by: randomUUID(),
      created_at: new Date().toISOString(),
    };
    const { position } = await side.store.append(
      `tokens.token-${tenantId}-${data.token_id}`,
      [{ type: 'TokenCreated', data, metadata: { tenant_id: tenantId } }],
      { expectedRevision: 'no_stream' },
    );
    const [event] = await side.store.readStream(`tokens.token-${tenantId}-${data.token_id}`);
    return { data, eventId: event!.event_id, position };
  };

  const disabledReasons = async (webhookId: string) =>
    (await side.store.readStream(webhooksStreams.webhook(tenant, webhookId)))
      .filter((event) => event.type === 'WebhookDisabled')
      .map((event) => (event.data as { reason: string }).reason);

  const historyOf = async (webhookId: string) =>
    (
      await side.ownerPool.query<{
        id: string;
        status: string;
        attempts: number;
        response_status: number | null;
      }>(
        'SELECT id, status, attempts, response_status FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY created_at',
        [webhookId],
      )
    ).rows;

  it('delivers a subscribed event once, signed with the tenant’s key, carrying its public data only', async () => {
    const webhookId = await subscribe('/signed');
    const { data, eventId } = await tokenCreated();
    const delivery = await eventually(async () => {
      const found = received.find((request) => request.path === '/signed');
      if (!found) throw new Error('not delivered yet');
      return found;
    });
    const deliveryId = `${webhookId}.${eventId}`;
    expect(delivery.headers).toMatchObject({ 'content-type': 'application/json', 'webhook-id': deliveryId });
    const expected = signatureHeaders(
      await signingKeys.secrets(tenant),
      deliveryId,
      Number(delivery.headers['webhook-timestamp']),
      delivery.body,
    );
    expect(delivery.headers['webhook-signature']).toBe(expected['webhook-signature']);
    expect(JSON.parse(delivery.body)).toEqual({
      id: eventId,
      type: 'token:created',
      timestamp: expect.any(String),
      tenant_id: tenant,
      webhook_id: webhookId,
      data: publicEvents.TokenCreated!.schema.parse(data),
    });
    for (const secret of ['SEALED-CARD-NUMBER', 'FINGERPRINT-OF-THE-CARD', 'jane@example.com']) {
      expect(delivery.body).not.toContain(secret);
    }
    await eventually(async () =>
      expect(await historyOf(webhookId)).toEqual([
        { id: deliveryId, status: 'succeeded', attempts: 1, response_status: 200 },
      ]),
    );
  });

  it('delivers nothing of another tenant’s events, of types not subscribed, or to a disabled webhook', async () => {
    await subscribe('/mine', ['token:created']);
    await subscribe('/deleted-only', ['token:deleted']);
    const disabled = await subscribe('/disabled');
    await webhooks.update(
      admin,
      disabled,
      { name: 'off', url: `${base}/disabled`, events: ['token:created'], status: 'disabled' },
      randomUUID(),
    );
    await subscribe('/theirs', ['token:created'], otherAdmin);
    await tokenCreated(tenant);
    await eventually(async () =>
      expect(received.filter((request) => request.path === '/mine')).toHaveLength(1),
    );
    // The other tenant's webhook gets its own tenant's event only.
    await tokenCreated(otherTenant);
    await eventually(async () =>
      expect(received.filter((request) => request.path === '/theirs')).toHaveLength(1),
    );
    const theirs = received.find((request) => request.path === '/theirs')!;
    expect(JSON.parse(theirs.body)).toMatchObject({
      tenant_id: otherTenant,
      data: { tenant_id: otherTenant },
    });
    expect(received.filter((request) => request.path === '/mine')).toHaveLength(1);
    expect(received.filter((request) => ['/deleted-only', '/disabled'].includes(request.path))).toEqual([]);
  });

  it('retries a failed attempt with the same delivery id until a 2xx, and keeps the outcome in the history', async () => {
    answers.set('/flaky', [500, 503, 204]);
    const webhookId = await subscribe('/flaky');
    await tokenCreated();
    await eventually(async () =>
      expect(await historyOf(webhookId)).toEqual([
        { id: expect.any(String), status: 'succeeded', attempts: 3, response_status: 204 },
      ]),
    );
    const attempts = received.filter((request) => request.path === '/flaky');
    expect(attempts).toHaveLength(3);
    expect(new Set(attempts.map((request) => request.headers['webhook-id'])).size).toBe(1);
  });

  it('a receiver that always fails gets WEBHOOK_ATTEMPTS attempts per delivery, and after WEBHOOK_DISABLE_AFTER_FAILURES failed deliveries its webhook is disabled', async () => {
    answers.set('/down', [500]);
    const down = await subscribe('/down');
    await tokenCreated();
    await eventually(async () =>
      expect(await historyOf(down)).toMatchObject([{ status: 'failed', attempts: 3, response_status: 500 }]),
    );
    expect(await disabledReasons(down)).toEqual([]);
    await tokenCreated();
    await eventually(async () => expect(await disabledReasons(down)).toEqual(['failing']));
    expect(received.filter((request) => request.path === '/down')).toHaveLength(6);
  });

  it('a 410 is not retried and disables the webhook at once: nothing more is sent to it', async () => {
    answers.set('/gone', [410]);
    const gone = await subscribe('/gone');
    await tokenCreated();
    await eventually(async () => expect(await disabledReasons(gone)).toEqual(['gone']));
    expect(await historyOf(gone)).toMatchObject([{ status: 'gone', attempts: 1, response_status: 410 }]);
    const canary = await subscribe('/after-gone');
    await tokenCreated();
    await eventually(async () =>
      expect(received.filter((request) => request.path === '/after-gone')).toHaveLength(1),
    );
    expect(received.filter((request) => request.path === '/gone')).toHaveLength(1);
    await eventually(async () => expect(await historyOf(canary)).toHaveLength(1));
  });

  it('a delivery enqueued twice (a replay after a crash) is sent once', async () => {
    const webhookId = await subscribe('/replayed', ['token:deleted']);
    const job: WebhookDeliveryJob = {
      delivery_id: `${webhookId}.replayed-event`,
      tenant_id: tenant,
      webhook_id: webhookId,
      event_id: 'replayed-event',
      type: 'token:deleted',
      occurred_at: new Date().toISOString(),
      data: {},
    };
    await enqueueDeliveries(queue, [job]);
    await eventually(async () => expect(await historyOf(webhookId)).toHaveLength(1));
    await enqueueDeliveries(queue, [job]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(received.filter((request) => request.path === '/replayed')).toHaveLength(1);
  });

  it('a drain sends many deliveries of one webhook in the log’s order, each once; one of them is redelivered from the history under its id', async () => {
    const webhookId = await subscribe('/many');
    const eventIds: string[] = [];
    for (let i = 0; i < 30; i++) eventIds.push((await tokenCreated()).eventId);
    const ids = () =>
      received
        .filter((request) => request.path === '/many')
        .map((request) => (JSON.parse(request.body) as { id: string }).id);
    await eventually(async () => expect(ids()).toHaveLength(30));
    expect(ids()).toEqual(eventIds);
    const history = new WebhookQueries(side.appPool);
    const deliveryId = `${webhookId}.${eventIds[3]}`;
    await eventually(async () =>
      expect(await history.sentDelivery(tenant, webhookId, deliveryId)).toBeDefined(),
    );
    expect(await redeliver(queue, history, tenant, webhookId, deliveryId)).toBe(true);
    await eventually(async () => expect(ids()).toHaveLength(31));
    const again = received.filter((request) => request.path === '/many').at(-1)!;
    expect(again.headers['webhook-id']).toBe(deliveryId);
    expect(await redeliver(queue, history, otherTenant, webhookId, deliveryId)).toBe(false);
  });

  it('attack: a receiver name that resolves to an internal address at delivery time (rebinding) is refused, nothing is sent', async () => {
    // An internal service (127.0.0.2 is not allow-listed), and a name whose answer changes: public
    // when the webhook is saved, internal when a delivery goes out.
    const internal = createServer((_request, response) => response.end());
    const hits: string[] = [];
    internal.on('request', (request: { url?: string }) => hits.push(request.url ?? ''));
    await new Promise<void>((resolve) => internal.listen(0, '127.0.0.2', resolve));
    const { port } = internal.address() as AddressInfo;
    const rebinding = (address: string, family: 4 | 6) => () => Promise.resolve([{ address, family }]);
    const savedAsPublic = new WebhookCommands({
      store: side.store,
      clock: systemClock,
      webhookAllowlist: new AddressAllowlist(config.WEBHOOK_ALLOWED_PRIVATE_ADDRESSES),
      resolver: rebinding('93.184.216.34', 4),
    });
    const rebindingQueue = createWebhookDeliveryQueue(
      { ...config, QUEUE_PREFIX: `${config.QUEUE_PREFIX}-rebinding` },
      createLogger('silent'),
    );
    const sender = new WebhookDeliveryWorker({
      config: { ...config, QUEUE_PREFIX: `${config.QUEUE_PREFIX}-rebinding` },
      queue: rebindingQueue,
      ownerPool: side.ownerPool,
      signingKeys,
      webhooks,
      clock: systemClock,
      logger: createLogger('silent'),
      resolver: rebinding('127.0.0.2', 4),
    });
    sender.start();
    try {
      const { row } = await savedAsPublic.create(
        admin,
        {
          name: 'rebinding',
          url: `https://hooks.rebinding.test:${port}/in`,
          events: ['token:deleted'],
          status: 'enabled',
        },
        randomUUID(),
      );
      await eventually(async () => {
        const copied = await side.ownerPool.query(
          'SELECT 1 FROM webhook_delivery_subscriptions WHERE webhook_id = $1',
          [row.id],
        );
        expect(copied.rows).toHaveLength(1);
      });
      await enqueueDeliveries(rebindingQueue, [
        {
          delivery_id: `${row.id}.rebinding`,
          tenant_id: tenant,
          webhook_id: row.id,
          event_id: 'rebinding',
          type: 'token:deleted',
          occurred_at: new Date().toISOString(),
          data: {},
        },
      ]);
      await eventually(async () =>
        expect(
          (
            await side.ownerPool.query<{ status: string; error: string }>(
              'SELECT status, error FROM webhook_deliveries WHERE webhook_id = $1',
              [row.id],
            )
          ).rows,
        ).toEqual([{ status: 'failed', error: expect.stringContaining('loopback address') }]),
      );
      expect(hits).toEqual([]);
    } finally {
      await sender.close();
      await rebindingQueue.close();
      await obliterateQueues({ ...config, QUEUE_PREFIX: `${config.QUEUE_PREFIX}-rebinding` });
      await new Promise((resolve) => internal.close(resolve));
    }
  });
});
