// Order per webhook: a receiver gets one webhook's deliveries in the event log's order, whatever
// their retries. A later event's delivery waits while an earlier one waits for its retry, and
// goes once the earlier one ended: delivered, or failed every attempt.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '@tokenvault/platform/testing';
import { startHttpDestination, type Received, type TestDestination } from './support/destinations.ts';
import { useStack } from './support/stack.ts';

describe('webhook deliveries in order per webhook', () => {
  const env = useStack({
    WEBHOOK_ALLOWED_PRIVATE_ADDRESSES: '127.0.0.1',
    WEBHOOK_BACKOFF_MS: '200',
    WEBHOOK_ATTEMPTS: '3',
  });
  let receiver: TestDestination;
  /** Attempts per delivery id, of each path. */
  const attempts = new Map<string, number>();
  /** The delivery id that each path fails (its first), and how many of its attempts fail. */
  const failing = new Map<string, { id?: string; times: number }>();

  beforeAll(async () => {
    receiver = await startHttpDestination();
    receiver.answer((request, res) => {
      const id = String(request.headers['webhook-id']);
      const count = (attempts.get(id) ?? 0) + 1;
      attempts.set(id, count);
      const rule = failing.get(request.url);
      if (rule && rule.id === undefined) rule.id = id;
      res.writeHead(rule?.id === id && count <= rule.times ? 500 : 200);
      res.end();
    });
  });
  afterAll(async () => receiver?.close());

  const tokenIdOf = (request: Received) =>
    (JSON.parse(request.body.toString('utf8')) as { data: { token_id: string } }).data.token_id;

  /** Subscribes `path`, creates `count` tokens one after the other, and answers their ids in order. */
  const tokensDeliveredTo = async (path: string, count: number) => {
    const created = await env.tenant.client.request<{ id: string }>('POST', '/webhooks', {
      body: { name: path, url: `${receiver.url}${path}`, events: ['token:created'] },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const tokens: string[] = [];
    for (let index = 0; index < count; index++) {
      const token = await env.tenant.client.request<{ id: string }>('POST', '/tokens', {
        body: { type: 'token', data: `${path} ${index}` },
      });
      tokens.push(token.body.id);
    }
    return { webhookId: created.body.id, tokens };
  };

  const receivedOn = (path: string) =>
    receiver.received.filter((request) => request.url === path).map(tokenIdOf);

  it('a receiver that fails the first delivery twice, then succeeds, sees the events in order', async () => {
    failing.set('/retried', { times: 2 });
    const { tokens } = await tokensDeliveredTo('/retried', 4);
    await eventually(async () => expect(receivedOn('/retried')).toHaveLength(6), 30_000);
    const [first, ...rest] = tokens;
    expect(receivedOn('/retried')).toEqual([first, first, first, ...rest]);
  });

  it('a delivery that failed every attempt lets the next ones go, still in order', async () => {
    failing.set('/exhausted', { times: 3 });
    const { webhookId, tokens } = await tokensDeliveredTo('/exhausted', 3);
    await eventually(async () => expect(receivedOn('/exhausted')).toHaveLength(5), 30_000);
    const [first, ...rest] = tokens;
    expect(receivedOn('/exhausted')).toEqual([first, first, first, ...rest]);
    const history = await env.tenant.client.request<{ data: { event_id: string; status: string }[] }>(
      'GET',
      `/webhooks/${webhookId}/deliveries`,
    );
    expect(history.body.data.map((delivery) => delivery.status).sort()).toEqual([
      'failed',
      'succeeded',
      'succeeded',
    ]);
  });
});
