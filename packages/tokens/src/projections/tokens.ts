import type { Projection } from '@tokenvault/cqrs';
import type { RecordedEvent } from '@tokenvault/eventstore';
import type { PoolClient } from '@tokenvault/platform';
import type { TokenEvent } from '../domain/token.ts';

type Recorded = RecordedEvent & TokenEvent;
type Created = Extract<TokenEvent, { type: 'TokenCreated' }>['data'];
type Deleted = Extract<TokenEvent, { type: 'TokenDeleted' }>['data'];

/** Consecutive events of one type, so each run is written with one statement. */
function runsOfSameType(events: readonly Recorded[]): Recorded[][] {
  const runs: Recorded[][] = [];
  for (const event of events) {
    const current = runs.at(-1);
    if (current && current[0]!.type === event.type) current.push(event);
    else runs.push([event]);
  }
  return runs;
}

async function insertTokens(tx: PoolClient, created: Created[]): Promise<void> {
  await tx.query(
    `INSERT INTO tokens (tenant_id, id, type, data_ciphertext, containers, metadata, fingerprint,
                         expires_at, created_by, created_at)
     SELECT t.tenant_id, t.token_id, t.type, t.data_ciphertext, t.containers, t.metadata, t.fingerprint,
            t.expires_at, t.created_by, t.created_at
     FROM jsonb_to_recordset($1::jsonb) AS t(
       tenant_id uuid, token_id text, type text, data_ciphertext text, containers text[], metadata jsonb,
       fingerprint text, expires_at timestamptz, created_by uuid, created_at timestamptz)
     ON CONFLICT DO NOTHING`,
    [JSON.stringify(created)],
  );
}

async function deleteTokens(tx: PoolClient, deleted: Deleted[]): Promise<void> {
  await tx.query(
    `DELETE FROM tokens t USING jsonb_to_recordset($1::jsonb) AS d(tenant_id uuid, token_id text)
     WHERE t.tenant_id = d.tenant_id AND t.id = d.token_id`,
    [JSON.stringify(deleted.map(({ tenant_id, token_id }) => ({ tenant_id, token_id })))],
  );
}

export const tokensProjection: Projection = {
  name: 'tokens',
  tables: ['tokens'],
  handles: ['TokenCreated', 'TokenDeleted'] satisfies TokenEvent['type'][],
  async apply(events, tx) {
    for (const run of runsOfSameType(events as readonly Recorded[])) {
      if (run[0]!.type === 'TokenCreated')
        await insertTokens(
          tx,
          run.map((event) => event.data as Created),
        );
      else
        await deleteTokens(
          tx,
          run.map((event) => event.data as Deleted),
        );
    }
  },
};
