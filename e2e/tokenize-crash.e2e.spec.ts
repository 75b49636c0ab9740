// The service process is killed (SIGKILL) while POST /tokenize calls of 100 token requests each
// are in flight: every call is all or nothing. Each call's tokens carry its own batch marker in
// their metadata; in the event store (and, once a restarted service has caught up, in the read
// model) every marker has all of its 100 tokens or none.
import { randomBytes, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, eventually, type TestDatabase } from '@tokenvault/platform/testing';
import { allMigrations } from '@tokenvault/runtime';
import { obliterateQueues } from '@tokenvault/jobs';
import { loadConfig } from '@tokenvault/platform';
import { runAdminCli, startServiceProcess, type ServiceProcess } from './support/service-process.ts';

const requestsPerCall = 100;
const loops = 6;
const loadMs = 1_500;

describe('POST /tokenize under a kill in the middle', () => {
  let database: TestDatabase;
  let base: NodeJS.ProcessEnv;
  let apiKey: string;
  let owner: pg.Pool;
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
      ...(process.env.PROJECTIONS ? { PROJECTIONS: process.env.PROJECTIONS } : {}),
    };
    const bootstrapped = await runAdminCli(
      'bootstrap.ts',
      ['--tenant-name', 'Crash', '--owner-email', `owner-${randomBytes(4).toString('hex')}@example.com`],
      base,
    );
    apiKey = String(bootstrapped.api_key);
    owner = new pg.Pool({ connectionString: database.url, max: 2 });
  }, 120_000);

  afterAll(async () => {
    for (const service of running) await service.stop();
    await owner?.end();
    await obliterateQueues(loadConfig(base)).catch(() => {});
    await database?.drop();
  });

  const tokenize = (service: ServiceProcess, batch: string) =>
    fetch(`${service.url}/tokenize`, {
      method: 'POST',
      headers: { 'svc-api-key': apiKey, 'content-type': 'application/json' },
      body: JSON.stringify({
        batch,
        values: Array.from({ length: requestsPerCall }, (_, index) => ({
          type: 'token',
          data: `${batch}-${index}`,
          metadata: { batch },
        })),
      }),
    });

  /** Tokens per batch marker, as the events have them and as the read model has them. */
  const counts = async () => {
    const events = await owner.query<{ batch: string; count: string }>(
      `SELECT data->'metadata'->>'batch' AS batch, count(*) FROM es_events
        WHERE event_type = 'TokenCreated' GROUP BY 1`,
    );
    const rows = await owner.query<{ batch: string; count: string }>(
      `SELECT metadata->>'batch' AS batch, count(*) FROM tokens GROUP BY 1`,
    );
    const of = (result: pg.QueryResult<{ batch: string; count: string }>) =>
      new Map(result.rows.map((row) => [row.batch, Number(row.count)]));
    return { events: of(events), tokens: of(rows) };
  };

  it('leaves every call with all of its tokens or none, and a restarted service answers them all', async () => {
    const first = await startServiceProcess(base);
    running.push(first);
    const answered = new Set<string>();
    const sent = new Set<string>();
    let stop = false;
    const load = Array.from({ length: loops }, async () => {
      while (!stop) {
        const batch = randomUUID();
        sent.add(batch);
        try {
          const response = await tokenize(first, batch);
          if (response.status === 200) answered.add(batch);
        } catch {
          return; // the process is gone
        }
      }
    });
    await sleep(loadMs);
    stop = true;
    first.child.kill('SIGKILL');
    await Promise.all(load);
    await first.stop();
    running.splice(running.indexOf(first), 1);
    // Calls were in flight when it died, and calls had been answered before.
    expect(answered.size).toBeGreaterThan(0);
    expect(sent.size).toBeGreaterThan(answered.size);

    const { events } = await counts();
    for (const [batch, count] of events) expect({ batch, count }).toEqual({ batch, count: requestsPerCall });
    for (const batch of answered) expect(events.get(batch)).toBe(requestsPerCall);

    const second = await startServiceProcess(base);
    running.push(second);
    await eventually(async () => {
      const after = await counts();
      expect(after.tokens).toEqual(after.events);
    }, 30_000);
    // The restarted service serves the survivors: one answered call's tokens, listed by their marker.
    const [someBatch] = answered;
    const listed = await fetch(
      `${second.url}/v2/tokens?size=100&metadata=${encodeURIComponent(JSON.stringify({ batch: someBatch }))}`,
      { headers: { 'svc-api-key': apiKey } },
    );
    expect(((await listed.json()) as { data: unknown[] }).data).toHaveLength(requestsPerCall);
  }, 180_000);
});
