import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { useStack } from './support/stack.ts';
import { everyRedisValue } from './support/redis.ts';
import { createReactor } from './support/reactors.ts';

interface Token {
  id: string;
  fingerprint?: string;
  card?: unknown;
  bank?: unknown;
}

/**
 * A token write's answer as a replay gives it: without the card and bank summaries and the
 * fingerprint, which follow the caller's read decision at the time (not kept; issue 48).
 */
const withoutSummaries = ({ fingerprint: _fingerprint, card: _card, bank: _bank, ...rest }: Token) => rest;

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
      expect(answer.body).toEqual(withoutSummaries(original.body));
      expect(answer.headers.get('idempotency-withheld-fields')).toBe('card, bank, fingerprint');
      expect(answer.headers.get('content-type')).toBe(original.headers.get('content-type'));
    }
    // Once it has finished, a retry replays it (also for those that were told 409).
    const retry = await send();
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotency-replayed')).toBe('true');
    expect(retry.body).toEqual(withoutSummaries(original.body));
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
      // Every answer to a valid API key carries the rate-limit headers, refusals included.
      expect(answer.headers.get('ratelimit-policy')).toMatch(/;q=\d+;w=60$/);
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

  it('replays a response (a token without its summaries and fingerprint), never one holding a secret, and keeps nothing readable in Redis', async () => {
    const marker = `MARKER-${randomBytes(8).toString('hex')}`;
    const key = `key-${marker}`;
    const create = () =>
      env.tenant.client.request<Token>('POST', '/tokens', {
        body: { data: { secret: marker }, metadata: { marker } },
        headers: { 'idempotency-key': key },
      });
    const parent = await create();
    expect(parent.status).toBe(201);
    const again = await create();
    expect(again.headers.get('idempotency-replayed')).toBe('true');
    expect(again.body).toEqual(withoutSummaries(parent.body));
    // A write whose response holds a secret: an application's create answers its new API key,
    // shown once (only its SHA-256 is kept): its replay is a 409 that says why, without the key.
    const appKey = newKey();
    const createApplication = () =>
      env.tenant.client.request<{ id: string; key: string; type: string; detail: string }>(
        'POST',
        '/applications',
        {
          body: { name: `App ${marker}`, type: 'private', permissions: ['token:read'] },
          headers: { 'idempotency-key': appKey },
        },
      );
    const created = await createApplication();
    expect(created.status).toBe(201);
    const replayed = await createApplication();
    expect(replayed.status).toBe(409);
    expect(replayed.body.type).toMatch(/idempotency-response-not-kept$/);
    expect(replayed.body.detail).toMatch(/status 201.*a new API key/);
    expect(JSON.stringify(replayed.body)).not.toContain(created.body.key);
    const values = await everyRedisValue(env.stack.config.REDIS_URL);
    expect(values.filter((value) => value.includes(marker))).toEqual([]);
    expect(values.filter((value) => value.includes(created.body.key))).toEqual([]);
  });

  it('refuses a body nested past the depth limit with a 400 before fingerprinting it', async () => {
    const deep = (levels: number) => `${'['.repeat(levels)}1${']'.repeat(levels)}`;
    const send = (path: string, body: string) =>
      fetch(`${env.stack.url}${path}`, {
        method: 'POST',
        headers: {
          'svc-api-key': env.tenant.apiKey,
          'content-type': 'application/json',
          'idempotency-key': newKey(),
        },
        body,
      });
    const parent = await env.tenant.client.tokens.create({ data: 'parent' });
    const child = await env.tenant.client.tokens.create({ data: 'child' });
    for (const [path, body] of [
      ['/tokens', `{"data":${deep(5_000)}}`],
      // A route that reads no body: the key's fingerprint still covers the body sent.
      [`/tokens/${parent.id}/children/${child.id}`, deep(5_000)],
    ] as const) {
      const answer = await send(path, body);
      expect(answer.status, path).toBe(400);
      expect(answer.headers.get('content-type'), path).toContain('application/problem+json');
    }
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

describe('Idempotency-Key on a request still running, and on PUT and PATCH', () => {
  // The default replay window (24 h): these tests replay after other writes.
  const env = useStack({ LOG_LEVEL: 'warn' });

  it('answers 409 to the same key while the first request runs, and 409 after it (a reactor’s answer is not kept)', async () => {
    const reactor = await createReactor(env.tenant, {
      code: `module.exports = async function () {
        const until = Date.now() + 1500;
        while (Date.now() < until) {}
        return { raw: 'slow' };
      };`,
    });
    const key = newKey();
    const invoke = () =>
      env.tenant.client.request<{ raw?: unknown; type?: string; status?: number; title?: string }>(
        'POST',
        `/reactors/${reactor}/react`,
        { body: {}, headers: { 'idempotency-key': key } },
      );
    let firstAnsweredAt = 0;
    const first = invoke().then((answer) => {
      firstAnsweredAt = performance.now();
      return answer;
    });
    // Well inside the first one's 1.5 s run.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const second = await invoke();
    const secondAnsweredAt = performance.now();
    expect(second.status).toBe(409);
    expect(second.headers.get('content-type')).toContain('application/problem+json');
    expect(second.headers.get('retry-after')).toBe('1');
    expect(second.body).toMatchObject({ status: 409, title: 'Conflict' });
    expect(second.body.type).toMatch(/idempotency-key-in-use$/);
    // Answered at once, not after waiting for the first.
    expect(firstAnsweredAt).toBe(0);

    const original = await first;
    expect(original.status).toBe(200);
    expect(original.body).toEqual({ raw: 'slow' });
    expect(original.headers.get('idempotency-replayed')).toBeNull();
    expect(firstAnsweredAt).toBeGreaterThan(secondAnsweredAt);

    // A reactor's answer can hold token data, so it is not kept: the retry is told the first
    // completed (with its status), at once, without running the reactor again.
    const retriedAt = performance.now();
    const retried = await invoke();
    expect(performance.now() - retriedAt).toBeLessThan(1_000);
    expect(retried.status).toBe(409);
    expect(retried.body.type).toMatch(/idempotency-response-not-kept$/);
    expect(retried.body).toMatchObject({ detail: expect.stringContaining('status 200') });
  });

  it('replays a PATCH /tokens/{id} merge patch without applying it again; another patch under the key is a 422', async () => {
    const token = await env.tenant.client.tokens.create({ data: { n: 1 }, metadata: { step: 'created' } });
    const key = newKey();
    const patch = (metadata: Record<string, string>, idempotencyKey?: string) =>
      env.tenant.client.request<Token & { metadata: Record<string, string>; type: string }>(
        'PATCH',
        `/tokens/${token.id}`,
        {
          body: { metadata },
          headers: {
            'content-type': 'application/merge-patch+json',
            ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
          },
        },
      );
    const first = await patch({ step: 'keyed' }, key);
    expect(first.status).toBe(200);
    expect(first.body.metadata).toEqual({ step: 'keyed' });
    expect(first.headers.get('idempotency-replayed')).toBeNull();
    // Another writer changes the token; a replay must not patch it back.
    expect((await patch({ step: 'unkeyed' })).status).toBe(200);

    const replayed = await patch({ step: 'keyed' }, key);
    expect(replayed.status).toBe(200);
    expect(replayed.headers.get('idempotency-replayed')).toBe('true');
    expect(replayed.headers.get('content-type')).toBe(first.headers.get('content-type'));
    expect(replayed.body).toEqual(withoutSummaries(first.body));
    const read = await env.tenant.client.request<{ metadata: Record<string, string> }>(
      'GET',
      `/tokens/${token.id}`,
    );
    expect(read.body.metadata).toEqual({ step: 'unkeyed' });

    const reused = await patch({ step: 'other' }, key);
    expect(reused.status).toBe(422);
    expect(reused.headers.get('content-type')).toContain('application/problem+json');
    expect(reused.body.type).toMatch(/idempotency-key-reused$/);
  });

  it('replays a PUT /applications/{id} without applying it again; another body under the key is a 422', async () => {
    const created = await env.tenant.client.applications.create({ name: 'Before', type: 'private' });
    const key = newKey();
    const put = (name: string, idempotencyKey?: string) =>
      env.tenant.client.request<{ id: string; name: string; type: string }>(
        'PUT',
        `/applications/${created.id}`,
        {
          body: { name },
          ...(idempotencyKey ? { headers: { 'svc-idempotency-key': idempotencyKey } } : {}),
        },
      );
    const first = await put('Keyed', key);
    expect(first.status).toBe(200);
    expect(first.body.name).toBe('Keyed');
    expect((await put('Unkeyed')).status).toBe(200);

    const replayed = await put('Keyed', key);
    expect(replayed.status).toBe(200);
    expect(replayed.headers.get('idempotency-replayed')).toBe('true');
    expect(replayed.body).toEqual(first.body);
    const read = await env.tenant.client.request<{ name: string }>('GET', `/applications/${created.id}`);
    expect(read.body.name).toBe('Unkeyed');

    const reused = await put('Another', key);
    expect(reused.status).toBe(422);
    expect(reused.headers.get('content-type')).toContain('application/problem+json');
    expect(reused.body.type).toMatch(/idempotency-key-reused$/);
    expect(
      (await env.tenant.client.request<{ name: string }>('GET', `/applications/${created.id}`)).body.name,
    ).toBe('Unkeyed');
  });
});
