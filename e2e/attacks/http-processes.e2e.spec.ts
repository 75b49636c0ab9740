// Several HTTP processes (HTTP_PROCESSES) from the attacker's side: each process has its own
// memory, so an allowance counted per process would be multiplied by their number (spread the
// requests, get more), and a cache kept per process would let a revoked key or a withdrawn
// permission live on in the process that did not take the change. Every request here opens a
// connection of its own, so consecutive requests land on both processes (their per-process
// request counts in /metrics show it).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  requestsTakenByProcess,
  startServiceWithHttpProcesses,
  statusesOf,
  type ServiceWithHttpProcesses,
} from '../support/http-processes.ts';

const signInCapPerClient = 4;

describe('attack: spreading requests over the HTTP processes', () => {
  let running: ServiceWithHttpProcesses;
  beforeAll(async () => {
    running = await startServiceWithHttpProcesses({
      SIGN_IN_EMAILS_PER_CLIENT_PER_HOUR: String(signInCapPerClient),
    });
  }, 420_000);
  afterAll(async () => running?.stop());

  const createApplication = async (body: Record<string, unknown>) => {
    const created = await call(running.url, 'POST', '/applications', {
      key: running.ownerKey,
      body: { type: 'private', ...body },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body as { id: string; key: string };
  };
  /** Runs `requests`, and checks that both processes took at least `each` of them. */
  const onBothProcesses = async <T>(each: number, requests: () => Promise<T>): Promise<T> => {
    const before = await requestsTakenByProcess(running.url);
    const result = await requests();
    const after = await requestsTakenByProcess(running.url);
    for (const process of ['1', '2'])
      expect(after.get(process)! - (before.get(process) ?? 0)).toBeGreaterThanOrEqual(each);
    return result;
  };

  it("gets no more than a key's rate limit in total, however the requests are spread", async () => {
    const quota = 10;
    const throttled = await createApplication({
      name: 'Throttled',
      permissions: ['token:read'],
      rate_limit: { requests_per_minute: quota },
    });
    const startedAt = performance.now();
    const seen = await onBothProcesses(quota, () =>
      statusesOf(running.url, 3 * quota, '/tokens/no-such-token', throttled.key),
    );
    const elapsedMs = performance.now() - startedAt;
    // The quota at once, then one more per 6 s (GCRA in Redis); counted per process it would be 2 × 10.
    const admitted = seen.filter((status) => status === 404).length;
    expect(admitted).toBeGreaterThanOrEqual(quota);
    expect(admitted).toBeLessThanOrEqual(quota + Math.ceil(elapsedMs / 6_000));
    expect(seen.filter((status) => status !== 404)).toEqual(Array(seen.length - admitted).fill(429));
  });

  it('gets no more sign-in e-mails from one client than its cap, however the requests are spread', async () => {
    const asked = await onBothProcesses(signInCapPerClient, async () => {
      const statuses: number[] = [];
      for (let i = 0; i < 3 * signInCapPerClient; i++) {
        const answer = await call(running.url, 'POST', '/sessions/email', {
          body: { email: `someone-${i}@example.com` },
        });
        statuses.push(answer.status);
      }
      return statuses;
    });
    expect(asked).toEqual([
      ...Array(signInCapPerClient).fill(202),
      ...Array(2 * signInCapPerClient).fill(429),
    ]);
  });

  it('cannot use a revoked key, a deleted application or a withdrawn permission in the process that did not take the change', async () => {
    const { url, ownerKey } = running;
    const revoked = await createApplication({ name: 'Revoked', permissions: ['token:read'] });
    const deleted = await createApplication({ name: 'Deleted', permissions: ['token:read'] });
    const narrowed = await createApplication({ name: 'Narrowed', permissions: ['token:read'] });
    // Both processes resolve each key and cache it (API_KEY_CACHE_TTL_MS: a minute).
    await onBothProcesses(9, async () => {
      for (const application of [revoked, deleted, narrowed])
        expect(await statusesOf(url, 6, '/tokens/no-such-token', application.key)).toEqual(
          Array(6).fill(404),
        );
    });

    const keys = await call(url, 'GET', `/applications/${revoked.id}/keys`, { key: ownerKey });
    const [keyId] = (keys.body as { id: string }[]).map((key) => key.id);
    const revocation = await call(url, 'DELETE', `/applications/${revoked.id}/keys/${keyId}`, {
      key: ownerKey,
    });
    expect(revocation.status).toBe(204);
    expect(await statusesOf(url, 6, '/tokens/no-such-token', revoked.key)).toEqual(Array(6).fill(401));

    expect((await call(url, 'DELETE', `/applications/${deleted.id}`, { key: ownerKey })).status).toBe(204);
    expect(await statusesOf(url, 6, '/tokens/no-such-token', deleted.key)).toEqual(Array(6).fill(401));

    const update = await call(url, 'PUT', `/applications/${narrowed.id}`, {
      key: ownerKey,
      body: { name: 'Narrowed', permissions: ['token:create'] },
    });
    expect(update.status, JSON.stringify(update.body)).toBe(200);
    expect(await statusesOf(url, 6, '/tokens/no-such-token', narrowed.key)).toEqual(Array(6).fill(403));
  });
});
