// The worker dies in the middle of a delivery (SIGKILL while the receiver holds the request): the
// delivery is not lost. Another process takes it up, under the same delivery id, and it succeeds.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, eventually, type TestDatabase } from '@tokenvault/platform/testing';
import { allMigrations } from '@tokenvault/runtime';
import { obliterateQueues } from '@tokenvault/jobs';
import { loadConfig } from '@tokenvault/platform';
import { startHttpDestination, type TestDestination } from './support/destinations.ts';
import { runAdminCli, startServiceProcess, type ServiceProcess } from './support/service-process.ts';

describe('webhook deliveries survive a worker killed mid-delivery', () => {
  let database: TestDatabase;
  let base: NodeJS.ProcessEnv;
  let apiKey: string;
  let receiver: TestDestination;
  const running: ServiceProcess[] = [];

  beforeAll(async () => {
    database = await createTestDatabase(allMigrations);
    const { KAFKA_BROKERS: _kafka, MASTER_KEYS: _keys, ...inherited } = process.env;
    base = {
      ...inherited,
      NODE_ENV: 'test',
      DATABASE_URL: database.url,
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      MASTER_KEY: randomBytes(32).toString('base64'),
      QUEUE_PREFIX: `tv-test-${database.name}`,
      WEBHOOK_ALLOWED_PRIVATE_ADDRESSES: '127.0.0.1',
      WEBHOOK_BACKOFF_MS: '200',
      ...(process.env.PROJECTIONS ? { PROJECTIONS: process.env.PROJECTIONS } : {}),
    };
    const bootstrapped = await runAdminCli(
      'bootstrap.ts',
      ['--tenant-name', 'Crash', '--owner-email', `owner-${randomBytes(4).toString('hex')}@example.com`],
      base,
    );
    apiKey = String(bootstrapped.api_key);
    receiver = await startHttpDestination();
  }, 120_000);

  afterAll(async () => {
    for (const service of running) await service.stop();
    await receiver?.close();
    await obliterateQueues(loadConfig(base)).catch(() => {});
    await database?.drop();
  });

  const call = async (service: ServiceProcess, method: string, path: string, body?: unknown) => {
    const response = await fetch(`${service.url}${path}`, {
      method,
      headers: { 'svc-api-key': apiKey, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    return {
      status: response.status,
      body: (await response.json().catch(() => ({}))) as Record<string, unknown>,
    };
  };

  it('is delivered at least once after the crash, under the same delivery id', async () => {
    // The first request is held and never answered: the process is killed while it waits.
    receiver.answer(() => {});
    const first = await startServiceProcess(base);
    running.push(first);
    const webhook = await call(first, 'POST', '/webhooks', {
      name: 'Crash',
      url: `${receiver.url}/crash`,
      events: ['token:created'],
    });
    expect(webhook.status, JSON.stringify(webhook.body)).toBe(201);
    const token = await call(first, 'POST', '/tokens', { type: 'token', data: 'in flight' });
    expect(token.status).toBe(201);
    await eventually(async () => expect(receiver.received).toHaveLength(1), 30_000);
    first.child.kill('SIGKILL');
    await first.stop();
    running.splice(running.indexOf(first), 1);

    receiver.answer((_request, res) => {
      res.writeHead(204);
      res.end();
    });
    const second = await startServiceProcess(base);
    running.push(second);
    await eventually(async () => {
      const history = await call(second, 'GET', `/webhooks/${String(webhook.body.id)}/deliveries`);
      expect(history.body.data).toMatchObject([{ status: 'succeeded', response_status: 204 }]);
    }, 60_000);
    const ids = new Set(receiver.received.map((request) => request.headers['webhook-id']));
    expect(receiver.received.length).toBeGreaterThanOrEqual(2);
    expect(ids.size).toBe(1);
    const [delivery] = receiver.received.map(
      (request) => JSON.parse(request.body.toString('utf8')) as { data: { token_id: string } },
    );
    expect(delivery!.data.token_id).toBe(token.body.id);
  }, 120_000);
});
