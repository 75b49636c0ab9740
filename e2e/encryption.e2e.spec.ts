import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { eventually } from '@tokenvault/platform/testing';
import { useStack } from './support/stack.ts';
import { everyRedisValue } from './support/redis.ts';
import { createReactor, react } from './support/reactors.ts';

/** Every text value of every table of the database, as one string per row. */
async function everyRowAsText(connectionString: string): Promise<string[]> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    const tables = await client.query<{ schema: string; name: string }>(
      `SELECT table_schema AS schema, table_name AS name FROM information_schema.tables
       WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')`,
    );
    const rows: string[] = [];
    for (const table of tables.rows) {
      const result = await client.query<{ row: string }>(
        `SELECT t::text AS row FROM ${pg.escapeIdentifier(table.schema)}.${pg.escapeIdentifier(table.name)} t`,
      );
      rows.push(...result.rows.map((row) => `${table.name}: ${row.row}`));
    }
    return rows;
  } finally {
    await client.end();
  }
}

describe('token data at rest', () => {
  const env = useStack();

  it('never stores, logs or caches a token’s data in the clear', async () => {
    const marker = `MARKER-${randomUUID()}`;
    const token = await env.tenant.client.tokens.create({
      data: { secret: marker, nested: [marker] },
      metadata: { note: 'safe' },
    });
    const card = await env.tenant.client.tokens.create({
      type: 'card',
      data: { number: '4000056655665556', expiration_month: 3, expiration_year: 2031, cvc: '737' },
    });
    // Read both back (the read path must not leave plaintext behind either), then delete one.
    expect(await env.tenant.client.tokens.get(token.id)).toMatchObject({ data: { secret: marker } });
    expect(await env.tenant.client.tokens.get(card.id)).toMatchObject({
      data: { number: '4000056655665556' },
    });
    await env.tenant.client.tokens.delete(card.id);
    // A failed request whose body carries the marker must not echo or log it either.
    const refused = await env.tenant.client.request('POST', '/tokens', {
      body: { data: marker, type: 'card' },
    });
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).not.toContain(marker);

    const rows = await everyRowAsText(env.stack.database.url);
    expect(rows.some((row) => row.startsWith('es_events:'))).toBe(true);
    expect(rows.filter((row) => row.includes(marker))).toEqual([]);
    expect(rows.filter((row) => row.includes('4000056655665556'))).toEqual([]);

    const redisValues = await everyRedisValue(env.stack.config.REDIS_URL);
    expect(redisValues.filter((value) => value.includes(marker))).toEqual([]);

    expect(env.stack.logs.length).toBeGreaterThan(0);
    expect(
      env.stack.logs.filter((line) => line.includes(marker) || line.includes(env.tenant.apiKey)),
    ).toEqual([]);
  });

  it('binds ciphertext to its token: a ciphertext copied to another token does not open', async () => {
    const a = await env.tenant.client.tokens.create({ data: 'alpha' });
    const b = await env.tenant.client.tokens.create({ data: 'beta' });
    const pool = env.stack.service.runtime.ownerPool;
    await pool.query(
      `UPDATE tokens SET data_ciphertext = (SELECT data_ciphertext FROM tokens WHERE tenant_id = $1 AND id = $2)
       WHERE tenant_id = $1 AND id = $3`,
      [env.tenant.tenantId, a.id, b.id],
    );
    const read = await env.tenant.client.request<{ status: number; detail: string }>(
      'GET',
      `/tokens/${b.id}`,
    );
    expect(read.status).toBe(500);
    expect(JSON.stringify(read.body)).not.toContain('alpha');
  });
});

describe('reactor configuration at rest', () => {
  const env = useStack();

  /** Proves the run saw the configuration without handing it back (a prefix and a length). */
  const formula = {
    code: `module.exports = async function (req) {
  const key = req.configuration.api_key;
  return { raw: { prefix: key.slice(0, 7), length: key.length } };
};`,
    configuration: [{ name: 'api_key', type: 'string' }],
  };

  it('never stores, logs or caches a reactor’s configuration in the clear, yet runs and shows it', async () => {
    const created = `MARKER-${randomUUID()}`;
    const updated = `MARKER-${randomUUID()}`;
    const reactorId = await createReactor(env.tenant, formula, { configuration: { api_key: created } });
    const put = await env.tenant.client.request<{ configuration: unknown }>('PUT', `/reactors/${reactorId}`, {
      body: { name: 'reactor', configuration: { api_key: updated } },
    });
    expect(put.status).toBe(200);
    expect(put.body.configuration).toEqual({ api_key: updated });

    // The run gets the configuration in the clear, sync and async (its job sealed in Redis).
    const ran = await react(env.tenant, reactorId);
    expect(ran.status, JSON.stringify(ran.body)).toBe(200);
    expect(ran.body).toEqual({ raw: { prefix: 'MARKER-', length: updated.length } });
    const accepted = await env.tenant.client.request<{ async_reactor_request_id: string }>(
      'POST',
      `/reactors/${reactorId}/react-async`,
      { body: {} },
    );
    expect(accepted.status).toBe(202);
    await eventually(async () => {
      const polled = await env.tenant.client.request<{ status: string; result?: unknown }>(
        'GET',
        `/reactors/${reactorId}/results/${accepted.body.async_reactor_request_id}`,
      );
      expect(polled.body).toMatchObject({ status: 'completed', result: ran.body });
    });

    // Reads open it.
    const read = await env.tenant.client.request<{ configuration: unknown }>('GET', `/reactors/${reactorId}`);
    expect(read.status).toBe(200);
    expect(read.body.configuration).toEqual({ api_key: updated });
    const listed = await env.tenant.client.request<{ data: { id: string; configuration: unknown }[] }>(
      'GET',
      `/reactors?id=${reactorId}`,
    );
    expect(listed.body.data).toEqual([expect.objectContaining({ configuration: { api_key: updated } })]);

    const rows = await everyRowAsText(env.stack.database.url);
    const events = rows.filter((row) => row.startsWith('es_events:') && row.includes(reactorId));
    expect(events.filter((row) => row.includes('configuration_ciphertext'))).toHaveLength(2);
    expect(rows.filter((row) => row.startsWith('reactors:') && row.includes(reactorId))).toHaveLength(1);
    for (const marker of [created, updated]) {
      expect(rows.filter((row) => row.includes(marker))).toEqual([]);
      const redisValues = await everyRedisValue(env.stack.config.REDIS_URL);
      expect(redisValues.filter((value) => value.includes(marker))).toEqual([]);
      expect(env.stack.logs.filter((line) => line.includes(marker))).toEqual([]);
    }
    // The scan covers the projector thread's lines too, not only the main thread's.
    expect(env.stack.logs.some((line) => line.includes('"name":"tokenvault-projector"'))).toBe(true);
  });

  it('binds the sealed configuration to its reactor: copied to another, it does not open', async () => {
    const a = await createReactor(env.tenant, formula, { configuration: { api_key: 'alpha-secret' } });
    const b = await createReactor(env.tenant, formula, { configuration: { api_key: 'beta-secret' } });
    await env.stack.service.runtime.ownerPool.query(
      `UPDATE reactors SET configuration_ciphertext =
         (SELECT configuration_ciphertext FROM reactors WHERE tenant_id = $1 AND id = $2)
       WHERE tenant_id = $1 AND id = $3`,
      [env.tenant.tenantId, a, b],
    );
    const read = await env.tenant.client.request('GET', `/reactors/${b}`);
    expect(read.status).toBe(500);
    expect(JSON.stringify(read.body)).not.toContain('alpha-secret');
    const ran = await react(env.tenant, b);
    expect(ran.status).toBe(500);
    expect(JSON.stringify(ran.body)).not.toContain('alpha-secret');
  });
});
