// Group commit under a kill: the service process is killed (SIGKILL) while many POST /tokens are in
// flight, so that batches of appends are being committed when it dies (as multi-row statements:
// one for the batch's appends, one for its claims). Every create it answered is
// there after the kill, and nothing is half-applied: no event without its token row (inline mode:
// at once; async: once the restarted service has caught up), no row without its event, no data
// claim without its event. Some creates share their data (deduplicated): conflicting claims in a
// batch answer with the token that holds the data.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '@tokenvault/platform/testing';
import { parsePrometheusText } from './support/prometheus.ts';
import { killMidLoad, prepareFreshService, type FreshService } from './support/fresh-service.ts';
import type { ServiceProcess } from './support/service-process.ts';

const loops = 24;
const loadMs = 1_000;
/** Every fourth create carries one of these values: concurrent creates of equal data. */
const sharedValues = Array.from({ length: 8 }, (_, index) => `shared-${index}`);
const inline = process.env.PROJECTIONS !== 'async';

describe('group commit under a kill in the middle of batches', () => {
  let fresh: FreshService;
  let owner: pg.Pool;

  beforeAll(async () => {
    fresh = await prepareFreshService({
      tenantName: 'Grouped',
      env: {
        RATE_LIMIT_PER_MINUTE: '0',
        // A wider window than the default: larger batches in flight when the kill comes.
        APPEND_GROUP_COMMIT_MS: '5',
      },
    });
    owner = new pg.Pool({ connectionString: fresh.databaseUrl, max: 2 });
  }, 120_000);

  afterAll(async () => {
    await owner?.end();
    await fresh?.close();
  });

  const create = (service: ServiceProcess, data: string) =>
    fetch(`${service.url}/tokens`, {
      method: 'POST',
      headers: { 'svc-api-key': fresh.apiKey, 'content-type': 'application/json' },
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
    const first = await fresh.start();
    let metrics: ReturnType<typeof parsePrometheusText> | undefined;
    const answered = new Set<string>();
    let sent = 0;
    const { failuresBeforeKill } = await killMidLoad(fresh, first, {
      loops,
      request: async (loop, request) => {
        const data = request % 4 === 0 ? sharedValues[(loop + request) % sharedValues.length]! : randomUUID();
        sent++;
        const response = await create(first, data);
        expect([200, 201]).toContain(response.status);
        answered.add(((await response.json()) as { id: string }).id);
      },
      // Under way before the kill: a loaded machine answers the first creates late.
      killWhen: async () => {
        await eventually(async () => expect(answered.size).toBeGreaterThan(2 * loops), 60_000);
        await sleep(loadMs);
        metrics = parsePrometheusText(await (await fetch(`${first.url}/metrics`)).text());
      },
    });
    // Creates were answered before the kill, and some were still in flight when it came.
    expect(failuresBeforeKill.filter((error) => !(error instanceof TypeError))).toEqual([]);
    expect(sent).toBeGreaterThan(answered.size);
    // Batches went as multi-row statements up to the kill (the path this spec guards).
    const batches = (statements: string) =>
      metrics!.value('tokenvault_eventstore_group_commit_batches_total', { statements });
    expect(batches('multi_row')).toBeGreaterThan(batches('per_append'));

    const afterKill = await stored();
    for (const id of answered)
      expect(afterKill.events.has(id), `answered token ${id} has its event`).toBe(true);
    // Every create deduplicates: each token's event and its data claim commit together or not at all.
    expect(afterKill.claims).toEqual(afterKill.events);
    if (inline) expect(afterKill.rows).toEqual(afterKill.events);

    const second = await fresh.start();
    await eventually(async () => {
      const now = await stored();
      expect(now.rows).toEqual(now.events);
    }, 30_000);
    const [someId] = answered;
    const read = await fetch(`${second.url}/tokens/${someId}`, { headers: { 'svc-api-key': fresh.apiKey } });
    expect(read.status).toBe(200);
  }, 300_000);
});
