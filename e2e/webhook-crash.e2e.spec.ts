// The worker dies in the middle of a delivery (SIGKILL while the receiver holds the request): the
// delivery is not lost. Another process takes it up, under the same delivery id, and it succeeds.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '@tokenvault/platform/testing';
import { startHttpDestination, type TestDestination } from './support/destinations.ts';
import { prepareFreshService, type FreshService } from './support/fresh-service.ts';
import type { ServiceProcess } from './support/service-process.ts';

describe('webhook deliveries survive a worker killed mid-delivery', () => {
  let fresh: FreshService;
  let receiver: TestDestination;

  beforeAll(async () => {
    fresh = await prepareFreshService({
      tenantName: 'Crash',
      env: { WEBHOOK_ALLOWED_PRIVATE_ADDRESSES: '127.0.0.1', WEBHOOK_BACKOFF_MS: '200' },
    });
    receiver = await startHttpDestination();
  }, 120_000);

  afterAll(async () => {
    await fresh?.close();
    await receiver?.close();
  });

  const call = async (service: ServiceProcess, method: string, path: string, body?: unknown) => {
    const response = await fetch(`${service.url}${path}`, {
      method,
      headers: { 'svc-api-key': fresh.apiKey, ...(body ? { 'content-type': 'application/json' } : {}) },
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
    const first = await fresh.start();
    const webhook = await call(first, 'POST', '/webhooks', {
      name: 'Crash',
      url: `${receiver.url}/crash`,
      events: ['token:created'],
    });
    expect(webhook.status, JSON.stringify(webhook.body)).toBe(201);
    const token = await call(first, 'POST', '/tokens', { type: 'token', data: 'in flight' });
    expect(token.status).toBe(201);
    await eventually(async () => expect(receiver.received).toHaveLength(1), 30_000);
    await fresh.kill(first);

    receiver.answer((_request, res) => {
      res.writeHead(204);
      res.end();
    });
    const second = await fresh.start();
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
