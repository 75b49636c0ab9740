import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { useStack } from './support/stack.ts';
import { everyRedisValue } from './support/redis.ts';

interface Token {
  id: string;
}

const newKey = () => `retry-${randomBytes(8).toString('hex')}`;

describe('Idempotency-Key', () => {
  // A short replay window, so the expiry can be seen.
  const env = useStack({ LOG_LEVEL: 'warn', IDEMPOTENCY_TTL_SECONDS: '2' });

  const tokenCount = async () => {
    const result = await env.stack.service.runtime.ownerPool.query<{ count: number }>(
      `SELECT count(*)::int AS count FROM es_events WHERE event_type = 'TokenCreated'`,
    );
    return result.rows[0]!.count;
  };

  it('20 concurrent identical creates under one key make one token; the rest replay or wait', async () => {
    const key = newKey();
    const body = { type: 'token', data: { n: 1 }, metadata: { purpose: 'concurrency' } };
    const before = await tokenCount();
    const send = () =>
      env.tenant.client.request<Token & { status?: number }>('POST', '/tokens', {
        body,
        headers: { 'idempotency-key': key },
      });
    const answers = await Promise.all(Array.from({ length: 20 }, send));
    const statuses = answers.map((answer) => answer.status);
    console.log('statuses of 20 concurrent creates:', statuses.join(' '));
    const originals = answers.filter(
      (a) => a.status === 201 && a.headers.get('idempotency-replayed') === null,
    );
    expect(originals).toHaveLength(1);
    const original = originals[0]!;
    for (const answer of answers) {
      if (answer === original) continue;
      if (answer.status === 409) {
        expect(answer.headers.get('retry-after')).toBe('1');
        expect(answer.headers.get('content-type')).toContain('application/problem+json');
        continue;
      }
      expect(answer.status).toBe(201);
      expect(answer.headers.get('idempotency-replayed')).toBe('true');
      expect(answer.body).toEqual(original.body);
      expect(answer.headers.get('content-type')).toBe(original.headers.get('content-type'));
    }
    // Once it has finished, a retry replays it (also for those that were told 409).
    const retry = await send();
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotency-replayed')).toBe('true');
    expect(retry.body).toEqual(original.body);
    expect(retry.headers.get('x-request-id')).not.toBe(original.headers.get('x-request-id'));
    expect(await tokenCount()).toBe(before + 1);
  });

  it('the same key with another body, path or method is a 422; another application may use it', async () => {
    const key = newKey();
    const first = await env.tenant.client.request('POST', '/tokens', {
      body: { data: 'a' },
      headers: { 'idempotency-key': key },
    });
    expect(first.status).toBe(201);
    const otherBody = await env.tenant.client.request<{ type: string }>('POST', '/tokens', {
      body: { data: 'b' },
      headers: { 'idempotency-key': key },
    });
    expect(otherBody.status).toBe(422);
    expect(otherBody.headers.get('content-type')).toContain('application/problem+json');
    expect(otherBody.body.type).toMatch(/idempotency-key-reused$/);
    const otherPath = await env.tenant.client.request('POST', '/applications', {
      body: { name: 'x', type: 'private' },
      headers: { 'idempotency-key': key },
    });
    expect(otherPath.status).toBe(422);
    // Key order does not change the fingerprint (canonical JSON).
    const reordered = await env.tenant.client.request('POST', '/tokens', {
      body: { data: 'a' },
      headers: { 'idempotency-key': key },
    });
    expect(reordered.headers.get('idempotency-replayed')).toBe('true');

    const other = await env.stack.createTenant('Another tenant');
    const elsewhere = await other.client.request('POST', '/tokens', {
      body: { data: 'b' },
      headers: { 'idempotency-key': key },
    });
    expect(elsewhere.status).toBe(201);
    expect(elsewhere.headers.get('idempotency-replayed')).toBeNull();
  });

  it('takes the SVC-IDEMPOTENCY-KEY alias as the same key', async () => {
    const key = newKey();
    const first = await env.tenant.client.request<Token>('POST', '/tokens', {
      body: { data: 'alias' },
      headers: { 'svc-idempotency-key': key },
    });
    const second = await env.tenant.client.request<Token>('POST', '/tokens', {
      body: { data: 'alias' },
      headers: { 'idempotency-key': key },
    });
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.headers.get('idempotency-replayed')).toBe('true');
    expect(second.body.id).toBe(first.body.id);
  });

  it('refuses a malformed key with a 400 naming header.idempotency-key', async () => {
    for (const key of ['x'.repeat(256), 'tab\there', 'ünïcode']) {
      const answer = await env.tenant.client.request<{ errors: Record<string, string[]> }>(
        'POST',
        '/tokens',
        {
          body: { data: 1 },
          headers: { 'idempotency-key': key },
        },
      );
      expect(answer.status, key).toBe(400);
      expect(Object.keys(answer.body.errors)).toEqual(['header.idempotency-key']);
    }
    const differing = await env.tenant.client.request<{ errors: Record<string, string[]> }>(
      'POST',
      '/tokens',
      {
        body: { data: 1 },
        headers: { 'idempotency-key': 'a', 'svc-idempotency-key': 'b' },
      },
    );
    expect(differing.status).toBe(400);
    expect(Object.keys(differing.body.errors)).toEqual(['header.idempotency-key']);
  });

  it('replays a client error too, but the key is free again after IDEMPOTENCY_TTL_SECONDS', async () => {
    const key = newKey();
    const id = `fixed-${randomBytes(4).toString('hex')}`;
    const first = await env.tenant.client.request('POST', '/tokens', {
      body: { id, data: 1 },
      headers: { 'idempotency-key': key },
    });
    expect(first.status).toBe(201);
    const replay = await env.tenant.client.request('POST', '/tokens', {
      body: { id, data: 1 },
      headers: { 'idempotency-key': key },
    });
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotency-replayed')).toBe('true');
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    // Run again: the id is taken now, so this time it is a 409 of its own (not a replay).
    const after = await env.tenant.client.request('POST', '/tokens', {
      body: { id, data: 1 },
      headers: { 'idempotency-key': key },
    });
    expect(after.status).toBe(409);
    expect(after.headers.get('idempotency-replayed')).toBeNull();
    const replayedConflict = await env.tenant.client.request('POST', '/tokens', {
      body: { id, data: 1 },
      headers: { 'idempotency-key': key },
    });
    expect(replayedConflict.status).toBe(409);
    expect(replayedConflict.headers.get('idempotency-replayed')).toBe('true');
    expect(replayedConflict.body).toEqual(after.body);
  });

  it('replays a response carrying data identically, and keeps nothing readable in Redis', async () => {
    const marker = `MARKER-${randomBytes(8).toString('hex')}`;
    const key = `key-${marker}`;
    const parent = await env.tenant.client.request<Token>('POST', '/tokens', {
      body: { data: { secret: marker } },
      headers: { 'idempotency-key': key },
    });
    expect(parent.status).toBe(201);
    // A write whose response carries the token's data: an application's create answers its key.
    const appKey = newKey();
    const created = await env.tenant.client.request<{ id: string; key: string }>('POST', '/applications', {
      body: { name: `App ${marker}`, type: 'private', permissions: ['token:read'] },
      headers: { 'idempotency-key': appKey },
    });
    expect(created.status).toBe(201);
    const replayed = await env.tenant.client.request<{ id: string; key: string }>('POST', '/applications', {
      body: { name: `App ${marker}`, type: 'private', permissions: ['token:read'] },
      headers: { 'idempotency-key': appKey },
    });
    expect(replayed.status).toBe(201);
    expect(replayed.headers.get('idempotency-replayed')).toBe('true');
    expect(replayed.body).toEqual(created.body);
    const values = await everyRedisValue(env.stack.config.REDIS_URL);
    expect(values.filter((value) => value.includes(marker))).toEqual([]);
    expect(values.filter((value) => value.includes(created.body.key))).toEqual([]);
  });

  it('leaves GET and DELETE alone', async () => {
    const token = await env.tenant.client.request<Token>('POST', '/tokens', { body: { data: 1 } });
    const key = newKey();
    const read = await env.tenant.client.request('GET', `/tokens/${token.body.id}`, {
      headers: { 'idempotency-key': key },
    });
    expect(read.headers.get('idempotency-replayed')).toBeNull();
    const deleted = await env.tenant.client.request('DELETE', `/tokens/${token.body.id}`, {
      headers: { 'idempotency-key': key },
    });
    expect(deleted.status).toBe(204);
  });
});
