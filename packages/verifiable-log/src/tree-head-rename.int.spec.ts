import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, createPool, migrate, withTenant, type Pool } from '@tokenvault/platform';
import { createTestDatabase, eventually, testAppRole, type TestDatabase } from '@tokenvault/platform/testing';
import { eventStoreMigrations, PostgresEventStore, type NewEvent } from '@tokenvault/eventstore';
import { projectorMigrations } from '@tokenvault/cqrs';
import { verifyLogProof } from '@tokenvault/sdk';
import { verifiableLogMigrations } from './migrations.ts';
import { buildProof } from './proof.ts';
import { LogSigningKey, type TreeHead } from './tree-head.ts';
import { createTreeHeadSigner, nextTreeHead, treeHeadSignerName } from './tree-head-signer.ts';
import { verifyLog } from './verify.ts';
import { readTreeHeads } from './postgres/read-tree-heads.ts';

// A database as a deployment before the rename left it: the first migration alone, a tree head
// written under the former schema (log_seals, log_sealed_events) and the signer's checkpoint
// under its former name. Then the migrations of today, and the code of today on what it left.
const [appliedBeforeRename] = verifiableLogMigrations;
const infrastructure = [...eventStoreMigrations, ...projectorMigrations];

describe('migration verifiable-log/002_tree_heads on a chain written before it', () => {
  const signingKey = new LogSigningKey(Buffer.alloc(32, 5).toString('base64'));
  const tenantId = randomUUID();
  let database: TestDatabase;
  let pool: Pool;
  let appPool: Pool;
  let store: PostgresEventStore;
  let writtenBefore: TreeHead;

  const appendTokens = async (count: number) => {
    for (let index = 0; index < count; index++) {
      const events: NewEvent[] = [
        {
          type: 'TokenCreated',
          data: { index, data_ciphertext: `v1.sealed-${index}` },
          metadata: { tenant_id: tenantId, actor_type: 'application' as const },
        },
      ];
      await store.append(`tokens.token-${randomUUID()}`, events, { expectedRevision: 'no_stream' });
    }
  };

  beforeAll(async () => {
    database = await createTestDatabase([...infrastructure, appliedBeforeRename!]);
    pool = createPool({ connectionString: database.url, max: 4 });
    appPool = createPool({ connectionString: database.url, max: 2, role: testAppRole });
    store = new PostgresEventStore(pool);
    await appendTokens(5);
    const events = await store.readAll({ limit: 100 });
    // What the signer wrote then, in one transaction with its checkpoint: the same bytes hashed
    // and signed, under the former table and column names.
    const written = nextTreeHead(events, undefined, new Date('2026-11-24T10:00:00.000Z'), signingKey);
    writtenBefore = written.treeHead;
    const hashes = written.hashes;
    const last = events.at(-1)!.position;
    await pool.query(
      `INSERT INTO log_seals (number, previous_hash, first_commit_position, first_global_position,
         last_commit_position, last_global_position, event_count, merkle_root, sealed_at, seal_hash,
         signature, key_id)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
      [
        writtenBefore.number,
        writtenBefore.previous_hash,
        writtenBefore.first_position.commit,
        writtenBefore.first_position.prepare,
        last.commit,
        last.prepare,
        writtenBefore.event_count,
        writtenBefore.merkle_root,
        writtenBefore.signed_at,
        writtenBefore.tree_head_hash,
        writtenBefore.signature,
        writtenBefore.key_id,
      ],
    );
    for (const [index, event] of events.entries()) {
      await pool.query(
        `INSERT INTO log_sealed_events (event_id, seal_number, leaf_index, commit_position, global_position,
           tenant_id, event_hash)
         VALUES ($1, 1, $2, $3, $4, $5, $6)`,
        [event.event_id, index, event.position.commit, event.position.prepare, tenantId, hashes[index]],
      );
    }
    await pool.query(
      `INSERT INTO projection_checkpoints (name, commit_position, prepare_position)
       VALUES ('log-sealer', $1::xid8, $2)`,
      [last.commit, last.prepare],
    );
    await migrate(pool, [...infrastructure, ...verifiableLogMigrations], testAppRole);
  });

  afterAll(async () => {
    await store?.close();
    await appPool?.end();
    await pool?.end();
    await database?.drop();
  });

  it('keeps the tree head written before it, which reads back and verifies through the code of today', async () => {
    expect(await readTreeHeads(pool, 1, 10)).toEqual([writtenBefore]);
    expect(await verifyLog({ store, db: pool, publicKey: signingKey.publicKey })).toMatchObject({
      ok: true,
      treeHeads: 1,
      events: 5,
      uncovered: 0,
      lastGoodTreeHead: { number: 1, tree_head_hash: writtenBefore.tree_head_hash },
    });
    const [first] = await store.readAll({ limit: 1 });
    const outcome = await buildProof(pool, store, first!.event_id, '1');
    expect(outcome.kind).toBe('proof');
    if (outcome.kind !== 'proof') return;
    expect(outcome.proof.tree_head).toEqual(writtenBefore);
    expect(await verifyLogProof(outcome.proof, { publicKey: signingKey.describe().public_key })).toEqual({
      valid: true,
    });
  });

  it('moves the signer’s checkpoint to its new name, so that the chain goes on from where it stood', async () => {
    const { rows } = await pool.query<{ name: string }>('SELECT name FROM projection_checkpoints');
    expect(rows.map((row) => row.name)).toEqual([treeHeadSignerName]);
    await appendTokens(3);
    const signer = createTreeHeadSigner({
      store,
      pool,
      logger: createLogger('warn'),
      batchSize: 100,
      intervalMs: 0,
      signingKey,
    });
    await signer.start();
    try {
      await eventually(async () => expect(await readTreeHeads(pool, 1, 10)).toHaveLength(2), 30_000);
    } finally {
      await signer.stop();
    }
    const [, next] = await readTreeHeads(pool, 1, 10);
    expect(next).toMatchObject({ number: 2, previous_hash: writtenBefore.tree_head_hash, event_count: 3 });
    expect(await verifyLog({ store, db: pool, publicKey: signingKey.publicKey })).toMatchObject({
      ok: true,
      treeHeads: 2,
      events: 8,
      uncovered: 0,
    });
  });

  it('leaves the tenant’s leaves readable by the app role under row-level security, and no name of a seal', async () => {
    const leaves = (tenant: string) =>
      withTenant(appPool, tenant, async (client) => {
        const { rows } = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM log_tree_leaves');
        return rows[0]!.n;
      });
    expect(await leaves(tenantId)).toBe(8);
    expect(await leaves(randomUUID())).toBe(0);
    const { rows } = await pool.query<{ name: string }>(
      `SELECT relname AS name FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relname LIKE '%seal%'
       UNION ALL SELECT conname FROM pg_constraint WHERE connamespace = 'public'::regnamespace AND conname LIKE '%seal%'
       UNION ALL SELECT attname FROM pg_attribute WHERE attrelid IN ('log_tree_heads'::regclass, 'log_tree_leaves'::regclass)
         AND attname LIKE '%seal%'`,
    );
    expect(rows).toEqual([]);
  });
});
