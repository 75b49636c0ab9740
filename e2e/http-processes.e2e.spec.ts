import { request } from 'node:http';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, eventually, type TestDatabase } from '@tokenvault/platform/testing';
import { loadConfig } from '@tokenvault/platform';
import { obliterateQueues } from '@tokenvault/jobs';
import { allMigrations } from '@tokenvault/runtime';
import { parsePrometheusText } from './support/prometheus.ts';
import { runAdminCli, startServiceProcess, type ServiceProcess } from './support/service-process.ts';

/*
 * `npm start` with HTTP_PROCESSES=2 (a child process, as an operator runs it): the primary keeps
 * the processors and the worker, two HTTP processes share the port. Every request here opens a
 * connection of its own, which the primary hands to the processes in turn, so consecutive
 * requests land on both; /metrics' per-process request counts show that they did.
 */

interface Answer {
  status: number;
  body: unknown;
}

/** One request on a connection of its own (no keep-alive: the next may go to the other process). */
function call(
  url: string,
  method: string,
  path: string,
  options: { key?: string; body?: unknown } = {},
): Promise<Answer> {
  const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
  return new Promise((resolve, reject) => {
    const outgoing = request(
      new URL(path, url),
      {
        method,
        agent: false,
        headers: {
          connection: 'close',
          ...(options.key ? { 'svc-api-key': options.key } : {}),
          ...(payload ? { 'content-type': 'application/json' } : {}),
        },
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => {
          const json = (response.headers['content-type'] ?? '').includes('json');
          resolve({ status: response.statusCode ?? 0, body: json && text ? JSON.parse(text) : text });
        });
      },
    );
    outgoing.on('error', reject);
    outgoing.end(payload);
  });
}

describe('HTTP_PROCESSES=2: the all-in-one serves HTTP from two processes', () => {
  let database: TestDatabase;
  let env: NodeJS.ProcessEnv;
  let service: ServiceProcess;
  let ownerKey: string;

  beforeAll(async () => {
    database = await createTestDatabase(allMigrations);
    const { KAFKA_BROKERS: _kafka, MASTER_KEYS: _keys, LOG_FORMAT: _format, ...inherited } = process.env;
    env = {
      ...inherited,
      NODE_ENV: 'test',
      DATABASE_URL: database.url,
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      MASTER_KEY: randomBytes(32).toString('base64'),
      QUEUE_PREFIX: `tv-test-${database.name}`,
      HTTP_PROCESSES: '2',
      ...(process.env.PROJECTIONS ? { PROJECTIONS: process.env.PROJECTIONS } : {}),
    };
    const bootstrapped = await runAdminCli(
      'bootstrap.ts',
      ['--tenant-name', 'Cores', '--owner-email', `owner-${randomBytes(4).toString('hex')}@example.com`],
      env,
    );
    ownerKey = String(bootstrapped.api_key);
    service = await startServiceProcess(env, { startTimeoutMs: 180_000 });
  }, 300_000);

  afterAll(async () => {
    await service?.stop();
    await obliterateQueues(loadConfig(env)).catch(() => {});
    await database?.drop();
  });

  const url = () => service.url;
  const metrics = async () => {
    const scraped = await call(url(), 'GET', '/metrics');
    expect(scraped.status).toBe(200);
    return parsePrometheusText(String(scraped.body));
  };
  /** Requests each HTTP process has taken so far, by its number. */
  const takenByProcess = async () => {
    const taken = new Map<string, number>();
    for (const sample of (await metrics()).samples) {
      if (sample.name === 'tokenvault_http_process_requests_total')
        taken.set(sample.labels.process!, sample.value);
    }
    return taken;
  };
  /** The pids of the HTTP processes that said they listen, in the order they did. */
  const listeningPids = () =>
    service.output
      .filter((line) => line.includes('"HTTP process listening"'))
      .map((line) => (JSON.parse(line) as { pid: number }).pid);
  const createApplication = async (body: Record<string, unknown>) => {
    const created = await call(url(), 'POST', '/applications', {
      key: ownerKey,
      body: { type: 'private', ...body },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body as { id: string; key: string };
  };
  /** Statuses of `count` requests, each on a connection of its own (so both processes answer). */
  const statuses = async (count: number, path: string, key: string) => {
    const seen: number[] = [];
    for (let i = 0; i < count; i++) seen.push((await call(url(), 'GET', path, { key })).status);
    return seen;
  };

  it('answers from both processes, is ready while both are up, and /metrics counts them together', async () => {
    const ready = await call(url(), 'GET', '/readyz');
    expect(ready).toEqual({
      status: 200,
      body: { status: 'ready', checks: { postgres: 'ok', redis: 'ok', processes: 'ok' } },
    });
    const healthz = { method: 'GET', route: '/healthz', status: '200' };
    const before = await metrics();
    const takenBefore = await takenByProcess();
    for (let i = 0; i < 20; i++) expect((await call(url(), 'GET', '/healthz')).status).toBe(200);
    const after = await metrics();
    const takenAfter = await takenByProcess();
    // Each process took part of them (each scrape is one more request of one of them).
    expect([...takenAfter.keys()].sort()).toEqual(['1', '2']);
    for (const process of ['1', '2']) {
      expect(takenAfter.get(process)! - (takenBefore.get(process) ?? 0)).toBeGreaterThanOrEqual(5);
    }
    // The count is all processes' together: one process's share would be about half.
    expect(after.value('tokenvault_http_requests_total', healthz)).toBe(
      before.value('tokenvault_http_requests_total', healthz) + 20,
    );
    // No pid reaches a client: the processes are told apart by their number only.
    const text = String((await call(url(), 'GET', '/metrics')).body);
    for (const pid of listeningPids()) expect(text).not.toContain(`"${pid}"`);
  });

  it("holds a key's rate limit in total across the processes, not once per process", async () => {
    const quota = 10;
    const throttled = await createApplication({
      name: 'Throttled',
      permissions: ['token:read'],
      rate_limit: { requests_per_minute: quota },
    });
    const takenBefore = await takenByProcess();
    const startedAt = performance.now();
    const seen = await statuses(3 * quota, '/tokens/no-such-token', throttled.key);
    const elapsedMs = performance.now() - startedAt;
    const takenAfter = await takenByProcess();
    for (const process of ['1', '2'])
      expect(takenAfter.get(process)! - takenBefore.get(process)!).toBeGreaterThanOrEqual(quota);
    // The quota at once, then one more per 6 s (GCRA): with a count per process it would be 2 × 10.
    const admitted = seen.filter((status) => status === 404).length;
    expect(admitted).toBeGreaterThanOrEqual(quota);
    expect(admitted).toBeLessThanOrEqual(quota + Math.ceil(elapsedMs / 6_000));
    expect(seen.filter((status) => status !== 404).every((status) => status === 429)).toBe(true);
  });

  it('sees a key revoked, an application deleted and its permissions changed through one process at once through the other', async () => {
    const revoked = await createApplication({ name: 'Revoked', permissions: ['token:read'] });
    const deleted = await createApplication({ name: 'Deleted', permissions: ['token:read'] });
    const narrowed = await createApplication({ name: 'Narrowed', permissions: ['token:read'] });
    // Both processes resolve each key and cache it (API_KEY_CACHE_TTL_MS: a minute).
    for (const application of [revoked, deleted, narrowed])
      expect(await statuses(6, '/tokens/no-such-token', application.key)).toEqual(Array(6).fill(404));

    const keys = await call(url(), 'GET', `/applications/${revoked.id}/keys`, { key: ownerKey });
    const [keyId] = (keys.body as { id: string }[]).map((key) => key.id);
    expect(
      (await call(url(), 'DELETE', `/applications/${revoked.id}/keys/${keyId}`, { key: ownerKey })).status,
    ).toBe(204);
    expect(await statuses(6, '/tokens/no-such-token', revoked.key)).toEqual(Array(6).fill(401));

    expect((await call(url(), 'DELETE', `/applications/${deleted.id}`, { key: ownerKey })).status).toBe(204);
    expect(await statuses(6, '/tokens/no-such-token', deleted.key)).toEqual(Array(6).fill(401));

    const updated = await call(url(), 'PUT', `/applications/${narrowed.id}`, {
      key: ownerKey,
      body: { name: 'Narrowed', permissions: ['token:create'] },
    });
    expect(updated.status, JSON.stringify(updated.body)).toBe(200);
    expect(await statuses(6, '/tokens/no-such-token', narrowed.key)).toEqual(Array(6).fill(403));
  });

  it('replaces a killed HTTP process, not ready meanwhile, and keeps answering', async () => {
    const pids = listeningPids();
    expect(pids).toHaveLength(2);
    process.kill(pids[0]!, 'SIGKILL');
    await eventually(async () =>
      expect(service.output.some((line) => line.includes('HTTP process exited; restarting it'))).toBe(true),
    );
    const exited = JSON.parse(service.output.find((line) => line.includes('HTTP process exited'))!) as Record<
      string,
      unknown
    >;
    expect(exited).toMatchObject({ level: 40, pid: pids[0], signal: 'SIGKILL' });
    // The other process answers everything while its sibling starts again, and says it is not ready.
    const notReady = await call(url(), 'GET', '/readyz');
    expect(notReady).toMatchObject({
      status: 503,
      body: {
        checks: { processes: 'unavailable' },
        problems: ['HTTP_PROCESSES: 1 of 2 HTTP processes are up'],
      },
    });
    expect(await statuses(10, '/tokens/no-such-token', ownerKey)).toEqual(Array(10).fill(404));
    await eventually(async () => expect(listeningPids()).toHaveLength(3), 120_000);
    expect(listeningPids()[2]).not.toBe(pids[0]);
    await eventually(async () => expect((await call(url(), 'GET', '/readyz')).status).toBe(200));
    const takenBefore = await takenByProcess();
    await statuses(10, '/healthz', ownerKey);
    const takenAfter = await takenByProcess();
    for (const process of ['1', '2'])
      expect(takenAfter.get(process)! - (takenBefore.get(process) ?? 0)).toBeGreaterThanOrEqual(3);
  }, 180_000);

  it('ends every process on SIGTERM, each HTTP process drained, exit code 0', async () => {
    const pids = listeningPids().slice(1);
    await service.stop();
    expect(service.child.exitCode).toBe(0);
    const stopping = service.output.filter((line) => line.includes('HTTP process stopping'));
    expect(stopping).toEqual(
      Array(2).fill('HTTP process stopping: asked by the primary process; shutting down'),
    );
    for (const pid of pids) expect(() => process.kill(pid, 0)).toThrow(/ESRCH/);
    expect(service.output.filter((line) => line.includes('HTTP process exited'))).toHaveLength(1);
  });
});
