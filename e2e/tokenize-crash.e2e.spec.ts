// The service process is killed (SIGKILL) while POST /tokenize calls of 100 token requests each
// are in flight: every call is all or nothing. Each call's tokens carry its own batch marker in
// their metadata; in the event store (and, once a restarted service has caught up, in the read
// model) every marker has all of its 100 tokens or none.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '@tokenvault/platform/testing';
import { killMidLoad, prepareFreshService, type FreshService } from './support/fresh-service.ts';
import type { ServiceProcess } from './support/service-process.ts';

const requestsPerCall = 100;
const loops = 6;
const loadMs = 1_500;

describe('POST /tokenize under a kill in the middle', () => {
  let fresh: FreshService;
  let owner: pg.Pool;

  beforeAll(async () => {
    fresh = await prepareFreshService({ tenantName: 'Crash' });
    owner = new pg.Pool({ connectionString: fresh.databaseUrl, max: 2 });
  }, 120_000);

  afterAll(async () => {
    await owner?.end();
    await fresh?.close();
  });

  const tokenize = (service: ServiceProcess, batch: string) =>
    fetch(`${service.url}/tokenize`, {
      method: 'POST',
      headers: { 'svc-api-key': fresh.apiKey, 'content-type': 'application/json' },
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
    const first = await fresh.start();
    const answered = new Set<string>();
    const sent = new Set<string>();
    await killMidLoad(fresh, first, {
      loops,
      request: async () => {
        const batch = randomUUID();
        sent.add(batch);
        const response = await tokenize(first, batch);
        if (response.status === 200) answered.add(batch);
      },
      // Under way before the kill: a loaded machine answers the first calls late.
      killWhen: async () => {
        await eventually(async () => expect(answered.size).toBeGreaterThan(0), 60_000);
        await sleep(loadMs);
      },
    });
    // Calls were in flight when it died, and calls had been answered before.
    expect(answered.size).toBeGreaterThan(0);
    expect(sent.size).toBeGreaterThan(answered.size);

    const { events } = await counts();
    for (const [batch, count] of events) expect({ batch, count }).toEqual({ batch, count: requestsPerCall });
    for (const batch of answered) expect(events.get(batch)).toBe(requestsPerCall);

    const second = await fresh.start();
    await eventually(async () => {
      const after = await counts();
      expect(after.tokens).toEqual(after.events);
    }, 30_000);
    // The restarted service serves the survivors: one answered call's tokens, listed by their marker.
    const [someBatch] = answered;
    const listed = await fetch(
      `${second.url}/v2/tokens?size=100&metadata=${encodeURIComponent(JSON.stringify({ batch: someBatch }))}`,
      { headers: { 'svc-api-key': fresh.apiKey } },
    );
    expect(((await listed.json()) as { data: unknown[] }).data).toHaveLength(requestsPerCall);
  }, 180_000);
});
