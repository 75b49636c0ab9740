import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TokenvaultClient } from '@tokenvault/sdk';
import { useStack } from './support/stack.ts';
import { startGatewayProcess, type GatewayProcess } from './support/gateway-process.ts';
import { createReactor, react } from './support/reactors.ts';

const policy = (headers: Headers) => headers.get('ratelimit-policy');
const remaining = (headers: Headers) => Number(/;r=(\d+)/.exec(headers.get('ratelimit') ?? '')?.[1]);

describe('rate limits', () => {
  const env = useStack({ LOG_LEVEL: 'warn', REACTOR_MAX_CONCURRENT_PER_TENANT: '1' });

  it('answers RateLimit-Policy and RateLimit on every API-key response, errors included', async () => {
    const first = await env.tenant.client.request('GET', '/applications');
    const second = await env.tenant.client.request('GET', '/tokens/no-such-token');
    expect(first.status).toBe(200);
    expect(second.status).toBe(404);
    expect(policy(first.headers)).toBe('"default";q=6000;w=60');
    expect(first.headers.get('ratelimit')).toMatch(/^"default";r=\d+;t=\d+$/);
    expect(policy(second.headers)).toBe('"default";q=6000;w=60');
    // The quota refills evenly (one request per 10 ms here), so sequential calls may see the same r;
    // the decrease is seen with a low quota below.
    expect(remaining(first.headers)).toBeLessThanOrEqual(5999);
    // Not on routes without a key, nor on a refused key.
    expect(policy((await env.stack.client.request('GET', '/healthz')).headers)).toBeNull();
    expect(policy((await env.stack.client.request('GET', '/applications')).headers)).toBeNull();
  });

  it('holds an application to its own rate_limit; another key of the tenant is unaffected', async () => {
    const created = await env.tenant.client.request<{ id: string; key: string; rate_limit?: unknown }>(
      'POST',
      '/applications',
      {
        body: {
          name: 'Throttled',
          type: 'private',
          permissions: ['token:create', 'token:read'],
          rate_limit: { requests_per_minute: 3 },
        },
      },
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.rate_limit).toEqual({ requests_per_minute: 3 });
    const read = await env.tenant.client.request<{ rate_limit?: unknown }>(
      'GET',
      `/applications/${created.body.id}`,
    );
    expect(read.body.rate_limit).toEqual({ requests_per_minute: 3 });

    const throttled = new TokenvaultClient(env.stack.url, created.body.key);
    const seen: number[] = [];
    for (let i = 0; i < 3; i++) {
      const answer = await throttled.request('POST', '/tokens', { body: { data: i } });
      expect(answer.status).toBe(201);
      expect(policy(answer.headers)).toBe('"application";q=3;w=60');
      seen.push(remaining(answer.headers));
    }
    expect(seen).toEqual([2, 1, 0]);
    const refused = await throttled.request<{ type: string; status: number }>('POST', '/tokens', {
      body: { data: 4 },
    });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('content-type')).toContain('application/problem+json');
    expect(refused.body.type).toMatch(/too-many-requests$/);
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(20);
    expect(policy(refused.headers)).toBe('"application";q=3;w=60');
    expect(remaining(refused.headers)).toBe(0);

    // The tenant's other key goes on.
    const unaffected = await env.tenant.client.request('POST', '/tokens', { body: { data: 'other' } });
    expect(unaffected.status).toBe(201);
    expect(policy(unaffected.headers)).toBe('"default";q=6000;w=60');
  });

  it('keeps rate_limit in the events and drops it on a PUT without it', async () => {
    const created = await env.tenant.client.request<{ id: string }>('POST', '/applications', {
      body: { name: 'Limited', type: 'private', rate_limit: { requests_per_minute: 50 } },
    });
    expect(created.status).toBe(201);
    const bad = await env.tenant.client.request<{ errors: Record<string, string[]> }>(
      'PUT',
      `/applications/${created.body.id}`,
      { body: { name: 'Limited', rate_limit: { requests_per_minute: 0 } } },
    );
    expect(bad.status).toBe(400);
    expect(Object.keys(bad.body.errors)).toEqual(['body.rate_limit.requests_per_minute']);
    const updated = await env.tenant.client.request<{ rate_limit?: unknown }>(
      'PUT',
      `/applications/${created.body.id}`,
      { body: { name: 'Limited' } },
    );
    expect(updated.status).toBe(200);
    expect(updated.body.rate_limit).toBeUndefined();
    const events = await env.stack.service.runtime.ownerPool.query<{
      event_type: string;
      data: { rate_limit?: unknown };
    }>(`SELECT event_type, data FROM es_events WHERE data->>'application_id' = $1 ORDER BY global_position`, [
      created.body.id,
    ]);
    expect(events.rows.map((row) => [row.event_type, row.data.rate_limit])).toEqual([
      ['ApplicationCreated', { requests_per_minute: 50 }],
      ['ApplicationUpdated', undefined],
    ]);
  });

  it('caps reactor invocations in flight per tenant (REACTOR_MAX_CONCURRENT_PER_TENANT=1)', async () => {
    const reactor = await createReactor(env.tenant, {
      code: `module.exports = async function () {
        const until = Date.now() + 1500;
        let spins = 0;
        while (Date.now() < until) spins++;
        return { raw: { spun: spins > 0 } };
      };`,
    });
    const answers = await Promise.all([1, 2, 3].map(() => react(env.tenant, reactor)));
    const statuses = answers.map((answer) => answer.status).sort();
    expect(statuses).toEqual([200, 429, 429]);
    for (const answer of answers.filter((a) => a.status === 429)) {
      expect(answer.headers.get('retry-after')).toBe('1');
      expect(answer.headers.get('content-type')).toContain('application/problem+json');
    }
    // The slot is given back when the call ends.
    const again = await react(env.tenant, reactor);
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ raw: { spun: true } });
  });

  it('holds an async invocation’s slot until its run finishes', async () => {
    const reactor = await createReactor(env.tenant, {
      code: `module.exports = async function () {
        const until = Date.now() + 1500;
        while (Date.now() < until) {}
        return { raw: 'done' };
      };`,
    });
    const accepted = await env.tenant.client.request<{ async_reactor_request_id: string }>(
      'POST',
      `/reactors/${reactor}/react-async`,
      { body: {} },
    );
    expect(accepted.status).toBe(202);
    expect((await react(env.tenant, reactor)).status).toBe(429);
    const id = accepted.body.async_reactor_request_id;
    let status = 'pending';
    while (status === 'pending') {
      await new Promise((resolve) => setTimeout(resolve, 100));
      const result = await env.tenant.client.request<{ status: string }>(
        'GET',
        `/reactors/${reactor}/results/${id}`,
      );
      status = result.body.status;
    }
    expect(status).toBe('completed');
    // The slot is released on the job's completion event: allow it a moment to arrive.
    let after = await react(env.tenant, reactor);
    for (let attempt = 0; after.status === 429 && attempt < 20; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      after = await react(env.tenant, reactor);
    }
    expect(after.status).toBe(200);
  });

  describe('across two gateway processes', () => {
    let second: GatewayProcess;
    beforeAll(async () => {
      second = await startGatewayProcess(env.stack.config);
    }, 90_000);
    afterAll(async () => second?.stop());

    it('holds the quota within the documented bound (quota × lease ÷ window), both processes answering', async () => {
      const quota = 120;
      // The lease lifetime of packages/runtime/src/guards/rate-limit.ts (leaseMs), as documented.
      const leaseMs = 1_000;
      const intervalMs = 60_000 / quota;
      const created = await env.tenant.client.request<{ key: string }>('POST', '/applications', {
        body: {
          name: 'Shared quota',
          type: 'private',
          permissions: ['token:read'],
          rate_limit: { requests_per_minute: quota },
        },
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const clients = [env.stack.url, second.url].map((url) => new TokenvaultClient(url, created.body.key));
      const perProcess = 150;
      const answers: { process: number; status: number; headers: Headers }[] = [];
      const startedAt = performance.now();
      // Five callers per process, back to back, so both processes draw on the quota at once.
      await Promise.all(
        clients.flatMap((client, process) =>
          Array.from({ length: 5 }, async () => {
            while (answers.filter((answer) => answer.process === process).length < perProcess) {
              const answer = await client.request('GET', '/tokens/no-such-token');
              answers.push({ process, status: answer.status, headers: answer.headers });
            }
          }),
        ),
      );
      const elapsedMs = performance.now() - startedAt;
      const admitted = answers.filter((answer) => answer.status !== 429);
      const refused = answers.filter((answer) => answer.status === 429);
      expect(new Set(admitted.map((answer) => answer.status))).toEqual(new Set([404]));
      // One shared GCRA admits the quota plus what refills meanwhile; leases add at most
      // quota × lease ÷ window, however many processes hold them.
      const refilled = Math.floor(elapsedMs / intervalMs) + 1;
      const overAdmission = Math.max(1, Math.floor((quota * leaseMs) / 60_000));
      expect(admitted.length).toBeLessThanOrEqual(quota + refilled + overAdmission);
      // A lapsed lease's unused requests are lost to the others: at most one lease per process.
      expect(admitted.length).toBeGreaterThanOrEqual(quota - 2 * overAdmission);
      for (const process of [0, 1]) {
        expect(admitted.some((answer) => answer.process === process)).toBe(true);
        expect(refused.some((answer) => answer.process === process)).toBe(true);
      }
      for (const answer of answers) {
        expect(policy(answer.headers)).toBe(`"application";q=${quota};w=60`);
        expect(remaining(answer.headers)).toBeLessThan(quota);
      }
      for (const answer of refused) {
        expect(remaining(answer.headers)).toBe(0);
        expect(Number(answer.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      }
    });
  });
});
