import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { eventually } from '@tokenvault/platform/testing';
import { verifyLogProof, type LogProofDocument } from '@tokenvault/sdk';
import { useStack, type TestStack, type TestTenant } from './support/stack.ts';

const run = promisify(execFile);
const root = new URL('..', import.meta.url).pathname;
const signingKey = Buffer.alloc(32, 21).toString('base64');

interface LogRow {
  id: string;
  event_id: string;
  event_hash: string | null;
  tree_head_number: number | null;
  entity_id: string;
  operation: string;
}

async function logRows(tenant: TestTenant): Promise<LogRow[]> {
  const response = await tenant.client.request<{ data: LogRow[] }>('GET', '/logs', { query: { size: 100 } });
  expect(response.status).toBe(200);
  return response.body.data;
}

/** Every event is covered by a tree head (the tree-head signer runs on the projector's thread). */
async function allCovered(stack: TestStack): Promise<void> {
  await eventually(async () => {
    const { rows } = await stack.service.runtime.ownerPool.query<{ events: number; covered: number }>(
      `SELECT (SELECT count(*)::int FROM es_events) AS events, (SELECT count(*)::int FROM log_tree_leaves) AS covered`,
    );
    expect(rows[0]!.covered).toBe(rows[0]!.events);
  }, 30_000);
}

/** npm run verify-log, against the stack's database; never throws on a non-zero exit. */
async function verifyLogCli(stack: TestStack, args: string[] = []) {
  try {
    const { stdout } = await run(process.execPath, ['services/admin-cli/src/verify-log.ts', ...args], {
      cwd: root,
      env: { ...process.env, DATABASE_URL: stack.config.DATABASE_URL, LOG_LEVEL: 'warn', NODE_ENV: 'test' },
      timeout: 60_000,
    });
    return { code: 0, stdout };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, stdout: `${failed.stdout ?? ''}${failed.stderr ?? ''}` };
  }
}

describe('the verifiable event log', () => {
  const env = useStack({ LOG_SIGNING_KEY: signingKey, LOG_TREE_HEAD_BATCH_SIZE: '7' });

  it('publishes the tree heads’ public key without an API key', async () => {
    const response = await env.stack.client.request<{
      algorithm: string;
      public_key: string;
      key_id: string;
    }>('GET', '/.well-known/tokenvault-log-key');
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({
      algorithm: 'Ed25519',
      key_id: expect.stringMatching(/^[0-9a-f]{16}$/),
    });
    expect(Buffer.from(response.body.public_key, 'base64')).toHaveLength(32);
    expect(JSON.stringify(response.body)).not.toContain(signingKey);
    expect(env.stack.logs.join('\n')).not.toContain(signingKey);
  });

  it('log rows name their event and tree head; a row’s proof verifies offline with the SDK, altered it does not', async () => {
    const token = await env.tenant.client.tokens.create({ data: 'a secret value 4242' });
    await env.tenant.client.tokens.get(token.id);
    await allCovered(env.stack);
    const rows = await logRows(env.tenant);
    expect(rows.length).toBeGreaterThanOrEqual(3);
    for (const row of rows) {
      expect(row).toMatchObject({
        id: expect.stringMatching(/^\d+$/),
        event_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        event_hash: expect.stringMatching(/^[0-9a-f]{64}$/),
        tree_head_number: expect.any(Number),
      });
    }
    const publicKey = (
      await env.stack.client.request<{ public_key: string }>('GET', '/.well-known/tokenvault-log-key')
    ).body.public_key;
    const created = rows.find((row) => row.entity_id === token.id && row.operation === 'create')!;
    const response = await env.tenant.client.request<LogProofDocument>('GET', `/logs/${created.id}/proof`);
    expect(response.status).toBe(200);
    const proof = response.body;
    expect(proof).toMatchObject({
      log_id: created.id,
      event: { event_id: created.event_id, type: 'TokenCreated' },
      event_hash: created.event_hash,
      tree_head: { number: created.tree_head_number, signature: expect.any(String) },
    });
    expect(await verifyLogProof(proof, { publicKey })).toEqual({ valid: true });
    expect(JSON.stringify(proof)).not.toContain('a secret value');

    const altered: LogProofDocument[] = [
      { ...proof, event: { ...proof.event, type: 'TokenDeleted' } },
      { ...proof, event: { ...proof.event, metadata: { ...proof.event.metadata, actor_id: randomUUID() } } },
      { ...proof, merkle_path: [...proof.merkle_path].reverse().concat('0'.repeat(64)) },
      { ...proof, tree_head: { ...proof.tree_head, signed_at: new Date(0).toISOString() } },
    ];
    for (const bad of altered) expect((await verifyLogProof(bad, { publicKey })).valid).toBe(false);

    // The read's row has a proof too (rows of one event share it).
    const read = rows.find((row) => row.entity_id === token.id && row.operation === 'read')!;
    const readProof = await env.tenant.client.request<LogProofDocument>('GET', `/logs/${read.id}/proof`);
    expect(await verifyLogProof(readProof.body, { publicKey })).toEqual({ valid: true });
  });

  it('a tenant’s proof holds nothing of another tenant’s, and another tenant’s row is not found', async () => {
    const other = await env.stack.createTenant('Other');
    const otherToken = await other.client.tokens.create({ data: 'the other tenant’s value' });
    const mine = await env.tenant.client.tokens.create({ data: 'mine' });
    await allCovered(env.stack);
    const otherRows = await logRows(other);
    const myRows = await logRows(env.tenant);
    const myRow = myRows.find((row) => row.entity_id === mine.id)!;
    const proof = (await env.tenant.client.request<LogProofDocument>('GET', `/logs/${myRow.id}/proof`)).body;
    const text = JSON.stringify(proof);
    expect(await verifyLogProof(proof)).toEqual({ valid: true });
    for (const secret of [
      other.tenantId,
      otherToken.id,
      other.applicationId,
      ...otherRows.map((row) => row.event_id),
    ]) {
      expect(text).not.toContain(secret);
    }
    // Another tenant's row id: 404, as for a row that does not exist.
    const foreign = await env.tenant.client.request('GET', `/logs/${otherRows[0]!.id}/proof`);
    expect(foreign.status).toBe(404);
    expect((await env.tenant.client.request('GET', '/logs/999999999999/proof')).status).toBe(404);
    const bad = await env.tenant.client.request<{ errors: Record<string, string[]> }>(
      'GET',
      '/logs/abc/proof',
    );
    expect(bad.status).toBe(400);
    expect(Object.keys(bad.body.errors)).toEqual(['path.id']);
  });

  describe('npm run verify-log', () => {
    const pool = () => env.stack.service.runtime.ownerPool;
    /** The covered events, in the log's order, with their transaction. */
    const coveredEvents = async () =>
      (
        await pool().query<{ event_id: string; global_position: string; transaction_id: string }>(
          `SELECT e.event_id::text, e.global_position::text, e.transaction_id::text
           FROM es_events e JOIN log_tree_leaves l USING (event_id)
           ORDER BY e.transaction_id, e.global_position`,
        )
      ).rows;

    async function expectNamed(
      tamper: string[],
      restore: string[],
      eventId: string,
      position: string,
      kind: string,
    ) {
      for (const sql of tamper) await pool().query(sql);
      try {
        const result = await verifyLogCli(env.stack);
        expect(result.code, result.stdout).toBe(1);
        expect(result.stdout).toContain(`event: ${eventId} at global position ${position} (${kind})`);
        expect(result.stdout).toMatch(/tree head: \d+:[0-9a-f]{64}/);
      } finally {
        for (const sql of restore) await pool().query(sql);
      }
    }

    it('passes on the untouched log, from the first event or from a trusted tree head, with signatures', async () => {
      await env.tenant.client.tokens.create({ data: 'more' });
      await allCovered(env.stack);
      const publicKey = (
        await env.stack.client.request<{ public_key: string }>('GET', '/.well-known/tokenvault-log-key')
      ).body.public_key;
      const whole = await verifyLogCli(env.stack, ['--public-key', publicKey]);
      expect(whole.code, whole.stdout).toBe(0);
      expect(whole.stdout).toContain('the event log verifies');
      expect(whole.stdout).toContain('every tree head signed');
      const { rows } = await pool().query<{ number: string; tree_head_hash: string }>(
        'SELECT number::text, tree_head_hash FROM log_tree_heads WHERE number = 2',
      );
      const fromTreeHead = await verifyLogCli(env.stack, [
        '--from-tree-head',
        `2:${rows[0]!.tree_head_hash}`,
      ]);
      expect(fromTreeHead.code, fromTreeHead.stdout).toBe(0);
      const wrong = await verifyLogCli(env.stack, ['--from-tree-head', `2:${'0'.repeat(64)}`]);
      expect(wrong.code).toBe(1);
      expect((await verifyLogCli(env.stack, ['--from-tree-head', 'two'])).code).toBe(2);
    }, 240_000);

    it('names an event whose data was changed', async () => {
      const target = (await coveredEvents())[5]!;
      const table = `original_${randomUUID().slice(0, 8)}`;
      await pool().query(
        `CREATE TABLE ${table} AS SELECT event_id, data FROM es_events WHERE event_id = $1`,
        [target.event_id],
      );
      await expectNamed(
        [`UPDATE es_events SET data = data || '{"forged": true}' WHERE event_id = '${target.event_id}'`],
        [
          `UPDATE es_events e SET data = o.data FROM ${table} o WHERE e.event_id = o.event_id`,
          `DROP TABLE ${table}`,
        ],
        target.event_id,
        target.global_position,
        'altered',
      );
    });

    it('names a deleted event', async () => {
      const target = (await coveredEvents())[9]!;
      const table = `deleted_${randomUUID().slice(0, 8)}`;
      await pool().query(`CREATE TABLE ${table} AS SELECT * FROM es_events WHERE event_id = $1`, [
        target.event_id,
      ]);
      await expectNamed(
        [`DELETE FROM es_events WHERE event_id = '${target.event_id}'`],
        [`INSERT INTO es_events SELECT * FROM ${table}`, `DROP TABLE ${table}`],
        target.event_id,
        target.global_position,
        'deleted',
      );
    });

    it('names a forged event inserted among covered ones', async () => {
      const after = (await coveredEvents())[3]!;
      const forged = randomUUID();
      const { rows } = await pool().query<{ global_position: string }>(
        `INSERT INTO es_events (transaction_id, stream_id, stream_revision, event_id, event_type, data, metadata)
         SELECT transaction_id, 'tokens.forged', 0, $2, 'TokenCreated', '{}', metadata FROM es_events WHERE event_id = $1
         RETURNING global_position::text`,
        [after.event_id, forged],
      );
      await expectNamed(
        [],
        [`DELETE FROM es_events WHERE event_id = '${forged}'`],
        forged,
        rows[0]!.global_position,
        'inserted',
      );
    });

    it('names the first of two swapped events', async () => {
      const events = await coveredEvents();
      const first = events[4]!;
      const second = events.find(
        (event) => event.transaction_id !== first.transaction_id && events.indexOf(event) > 6,
      )!;
      const swap = (a: typeof first, b: typeof first) => [
        `UPDATE es_events SET global_position = -global_position WHERE event_id = '${a.event_id}'`,
        `UPDATE es_events SET global_position = ${a.global_position}, transaction_id = '${a.transaction_id}' WHERE event_id = '${b.event_id}'`,
        `UPDATE es_events SET global_position = ${b.global_position}, transaction_id = '${b.transaction_id}' WHERE event_id = '${a.event_id}'`,
      ];
      await expectNamed(
        swap(first, second),
        [
          `UPDATE es_events SET global_position = -global_position WHERE event_id = '${first.event_id}'`,
          `UPDATE es_events SET global_position = ${second.global_position}, transaction_id = '${second.transaction_id}' WHERE event_id = '${second.event_id}'`,
          `UPDATE es_events SET global_position = ${first.global_position}, transaction_id = '${first.transaction_id}' WHERE event_id = '${first.event_id}'`,
        ],
        first.event_id,
        first.global_position,
        'reordered',
      );
    });

    it('still passes after the tampering was undone and a tenant was deleted (its key shredded)', async () => {
      const doomed = await env.stack.createTenant('Doomed');
      await doomed.client.tokens.create({ data: 'shredded soon' });
      expect((await doomed.client.request('DELETE', '/tenants/self')).status).toBe(204);
      await allCovered(env.stack);
      const result = await verifyLogCli(env.stack);
      expect(result.code, result.stdout).toBe(0);
    });
  });
});
