// Group commit under a kill: the service process is killed (SIGKILL) while many POST /tokens are in
// flight, so that batches of appends are being committed when it dies (as multi-row statements:
// one for the batch's appends, one for its claims). Every create it answered is
// there after the kill, and nothing is half-applied: no event without its token row (inline mode:
// at once; async: once the restarted service has caught up), no row without its event, no data
// claim without its event. Some creates share their data (deduplicated): conflicting claims in a
// batch answer with the token that holds the data.
import { randomBytes, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, eventually, type TestDatabase } from '@tokenvault/platform/testing';
import { allMigrations } from '@tokenvault/runtime';
import { obliterateQueues } from '@tokenvault/jobs';
import { loadConfig } from '@tokenvault/platform';
import { parsePrometheusText } from './support/prometheus.ts';
import { runAdminCli, startServiceProcess, type ServiceProcess } from './support/service-process.ts';

const loops = 24;
const loadMs = 1_000;
/** Every fourth create carries one of these values: concurrent creates of equal data. */
const sharedValues = Array.from({ length: 8 }, (_, index) => `shared-${index}`);
const inline = process.env.PROJECTIONS !== 'async';

describe('group commit under a kill in the middle of batches', () => {
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
      RATE_LIMIT_PER_MINUTE: '0',
      // A wider window than the default: larger batches in flight when the kill comes.
      APPEND_GROUP_COMMIT_MS: '5',
      ...(process.env.PROJECTIONS ? { PROJECTIONS: process.env.PROJECTIONS } : {}),
    };
    const bootstrapped = await runAdminCli(
      'bootstrap.ts',
      ['--tenant-name', 'Grouped', '--owner-email', `owner-${randomBytes(4).toString('hex')}@example.com`],
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

  const create = (service: ServiceProcess, data: string) =>
    fetch(`${service.url}/tokens`, {
      method: 'POST',
      headers: { 'svc-api-key': apiKey, 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'token', data, deduplicate_token: true }),
    });

  /** Token ids as the events, the read model and the data claims have them. */
  const stored = async () => {
    const ids = async (sql: string) =>
      new Set((await owner.query<{ id: string }>(sql)).rows.map((row) => row.id));
    return {
      events: await ids(`SELECT data->>'token_id' AS id FROM es_events WHERE event_type = 'TokenCreated'`),
      rows: await ids('SELECT id FROM tokens'),
      claims: await ids(
        `SELECT substr(holder, strpos(holder, '/') + 1) AS id FROM es_unique_claims WHERE scope = 'token-data'`,
      ),
    };
  };

  it('keeps every answered create and half-applies none', async () => {
    const first = await startServiceProcess(base);
    running.push(first);
    const answered = new Set<string>();
    let sent = 0;
    const failures: unknown[] = [];
    let stop = false;
    const load = Array.from({ length: loops }, async (_, loop) => {
      for (let request = 0; !stop; request++) {
        const data = request % 4 === 0 ? sharedValues[(loop + request) % sharedValues.length]! : randomUUID();
        sent++;
        try {
          const response = await create(first, data);
          expect([200, 201]).toContain(response.status);
          answered.add(((await response.json()) as { id: string }).id);
        } catch (error) {
          if (!stop) failures.push(error);
          return; // the process is gone
        }
      }
    });
    // Under way before the kill: a loaded machine answers the first creates late.
    await eventually(async () => expect(answered.size).toBeGreaterThan(2 * loops), 60_000);
    await sleep(loadMs);
    const metrics = parsePrometheusText(await (await fetch(`${first.url}/metrics`)).text());
    stop = true;
    first.child.kill('SIGKILL');
    await Promise.all(load);
    await first.stop();
    running.splice(running.indexOf(first), 1);
    // Creates were answered before the kill, and some were still in flight when it came.
    expect(failures.filter((error) => !(error instanceof TypeError))).toEqual([]);
    expect(sent).toBeGreaterThan(answered.size);
    // Batches went as multi-row statements up to the kill (the path this spec guards).
    const batches = (statements: string) =>
      metrics.value('tokenvault_eventstore_group_commit_batches_total', { statements });
    expect(batches('multi_row')).toBeGreaterThan(batches('per_append'));

    const afterKill = await stored();
    for (const id of answered)
      expect(afterKill.events.has(id), `answered token ${id} has its event`).toBe(true);
    // Every create deduplicates: each token's event and its data claim commit together or not at all.
    expect(afterKill.claims).toEqual(afterKill.events);
    if (inline) expect(afterKill.rows).toEqual(afterKill.events);

    const second = await startServiceProcess(base);
    running.push(second);
    await eventually(async () => {
      const now = await stored();
      expect(now.rows).toEqual(now.events);
    }, 30_000);
    const [someId] = answered;
    const read = await fetch(`${second.url}/tokens/${someId}`, { headers: { 'svc-api-key': apiKey } });
    expect(read.status).toBe(200);
  }, 300_000);
});
