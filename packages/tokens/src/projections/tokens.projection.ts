import { onTenantDeleted, type DataOf, type Projection, type TenantDeletedEvent } from '@tokenvault/cqrs';
import { independentRowsStatement } from '@tokenvault/eventstore';
import type { PoolClient } from '@tokenvault/platform';
import type { TokenEvent } from '../domain/tokens.events.ts';
import { deleteAssociations, deleteAssociationsOf, insertAssociations } from './associations.projection.ts';
import { runsOfSameType } from './runs.projection.ts';

/** What this projection handles: every event of a token's stream, and its tenant's deletion. */
type Handled = TokenEvent | TenantDeletedEvent;

const json = (rows: unknown[]) => JSON.stringify(rows);

/**
 * The metadata lookup rows (token_metadata, what a metadata filter reads) of the tokens a
 * preceding CTE returned with tenant_id, id, metadata and created_at; an entry a token already
 * has takes the new value.
 */
const insertMetadataFrom = (cte: string) =>
  `INSERT INTO token_metadata (tenant_id, token_id, key, value, created_at)
   SELECT ${cte}.tenant_id, ${cte}.id, e.key, e.value, ${cte}.created_at
   FROM ${cte}, jsonb_each_text(${cte}.metadata) e
   ON CONFLICT (tenant_id, token_id, key) DO UPDATE SET value = excluded.value
     WHERE token_metadata.value <> excluded.value`;

/**
 * The blind-index rows (token_search_index, what a search reads) of these tokens, as their events
 * give them: rows of values a token no longer has go, new ones are inserted.
 */
async function replaceSearchIndexValues(
  tx: PoolClient,
  tokens: { tenant_id: string; token_id: string; search_index_values?: string[] }[],
): Promise<void> {
  await tx.query({
    name: 'token_search_index_replaced',
    text: `WITH given AS (
       SELECT g.tenant_id, g.token_id, coalesce(g.search_index_values, '{}') AS search_index_values
       FROM jsonb_to_recordset($1::jsonb) AS g(tenant_id uuid, token_id text, search_index_values text[])),
     dropped AS (
       DELETE FROM token_search_index s USING given
       WHERE s.tenant_id = given.tenant_id AND s.token_id = given.token_id
         AND NOT s.value = ANY(given.search_index_values))
     INSERT INTO token_search_index (tenant_id, token_id, value, created_at)
     SELECT t.tenant_id, t.id, v.value, t.created_at
     FROM given JOIN tokens t ON t.tenant_id = given.tenant_id AND t.id = given.token_id,
       unnest(given.search_index_values) AS v(value)
     ON CONFLICT DO NOTHING`,
    values: [
      json(
        tokens.map(({ tenant_id, token_id, search_index_values }) => ({
          tenant_id,
          token_id,
          search_index_values,
        })),
      ),
    ],
  });
}

async function created(tx: PoolClient, events: DataOf<TokenEvent, 'TokenCreated'>[]): Promise<void> {
  // The token rows and their metadata entries in one statement (a replayed event inserts neither).
  // Each event's rows are its own token's: group commit may send it once for a batch's creates.
  await tx.query(
    independentRowsStatement(
      'tokens_created',
      `WITH inserted AS (
         INSERT INTO tokens (tenant_id, id, type, data_ciphertext, containers, metadata, fingerprint,
                             expires_at, created_by, created_at, privacy, card, bank, search_indexes,
                             fingerprint_expression, mask)
         SELECT t.tenant_id, t.token_id, t.type, t.data_ciphertext, t.containers, t.metadata, t.fingerprint,
                t.expires_at, t.created_by, t.created_at, t.privacy, t.card, t.bank, t.search_indexes,
                t.fingerprint_expression, t.mask
         FROM jsonb_to_recordset($1::jsonb) AS t(
           tenant_id uuid, token_id text, type text, data_ciphertext text, containers text[], metadata jsonb,
           fingerprint text, expires_at timestamptz, created_by uuid, created_at timestamptz,
           privacy jsonb, card jsonb, bank jsonb, search_indexes jsonb, fingerprint_expression text, mask jsonb)
         ON CONFLICT DO NOTHING
         RETURNING tenant_id, id, metadata, created_at)
       ${insertMetadataFrom('inserted')}`,
      events,
    ),
  );
  const indexed = events.filter((event) => event.search_index_values?.length);
  if (indexed.length) await replaceSearchIndexValues(tx, indexed);
  await insertAssociations(
    tx,
    events.flatMap((event) =>
      event.parent_id
        ? [
            {
              tenant_id: event.tenant_id,
              parent_id: event.parent_id,
              child_id: event.token_id,
              type: event.type,
              containers: event.containers,
              ...(event.expires_at ? { expires_at: event.expires_at } : {}),
              associated_at: event.created_at,
            },
          ]
        : [],
    ),
  );
}

/** A new ciphertext of the same data: nothing else of the token changes. */
async function reencrypted(tx: PoolClient, events: DataOf<TokenEvent, 'TokenReencrypted'>[]): Promise<void> {
  for (const event of events) {
    await tx.query('UPDATE tokens SET data_ciphertext = $3 WHERE tenant_id = $1 AND id = $2', [
      event.tenant_id,
      event.token_id,
      event.data_ciphertext,
    ]);
  }
}

/**
 * The data without its CVC, in a new ciphertext, and what the token derives from its data as the
 * event recomputed it (fingerprint, summaries, search indexes and their blind values: index rows
 * of values the data no longer gives go). Events from before `derived` change the ciphertext only.
 */
async function cvcRemoved(tx: PoolClient, events: DataOf<TokenEvent, 'TokenCvcRemoved'>[]): Promise<void> {
  for (const event of events) {
    const { derived } = event;
    if (!derived) {
      await tx.query(
        'UPDATE tokens SET data_ciphertext = $3, cvc_removed_at = $4 WHERE tenant_id = $1 AND id = $2',
        [event.tenant_id, event.token_id, event.data_ciphertext, event.removed_at],
      );
      continue;
    }
    await tx.query(
      `UPDATE tokens SET data_ciphertext = $3, cvc_removed_at = $4, fingerprint = $5, card = $6, bank = $7,
         search_indexes = $8, fingerprint_expression = $9
       WHERE tenant_id = $1 AND id = $2`,
      [
        event.tenant_id,
        event.token_id,
        event.data_ciphertext,
        event.removed_at,
        derived.fingerprint,
        derived.card ? JSON.stringify(derived.card) : null,
        derived.bank ? JSON.stringify(derived.bank) : null,
        derived.search_indexes ? JSON.stringify(derived.search_indexes) : null,
        derived.fingerprint_expression ?? null,
      ],
    );
  }
  const recomputed = events.flatMap(({ tenant_id, token_id, derived }) =>
    derived
      ? [
          {
            tenant_id,
            token_id,
            ...(derived.search_index_values ? { search_index_values: derived.search_index_values } : {}),
          },
        ]
      : [],
  );
  if (recomputed.length) await replaceSearchIndexValues(tx, recomputed);
}

/**
 * Each event holds the token's editable state in full, so only the last update of a token in the
 * run counts (one UPDATE … FROM would apply an arbitrary one of several). The token's association
 * rows as a child carry its containers and expiry for child lists: they change with it.
 */
async function updated(tx: PoolClient, events: DataOf<TokenEvent, 'TokenUpdated'>[]): Promise<void> {
  const last = [...new Map(events.map((event) => [`${event.tenant_id}/${event.token_id}`, event])).values()];
  // The token rows and their metadata entries in one statement: entries the update dropped go,
  // the others are inserted or take their new value.
  await tx.query(
    `WITH updated AS (
       UPDATE tokens t SET data_ciphertext = u.data_ciphertext, fingerprint = u.fingerprint,
         containers = u.containers, metadata = u.metadata, expires_at = u.expires_at,
         modified_by = u.modified_by, modified_at = u.modified_at, card = u.card, bank = u.bank,
         search_indexes = u.search_indexes, fingerprint_expression = u.fingerprint_expression, mask = u.mask,
         privacy = coalesce(u.privacy, t.privacy)
       FROM jsonb_to_recordset($1::jsonb) AS u(
         tenant_id uuid, token_id text, data_ciphertext text, fingerprint text, containers text[],
         metadata jsonb, expires_at timestamptz, modified_by uuid, modified_at timestamptz,
         card jsonb, bank jsonb, search_indexes jsonb, fingerprint_expression text, mask jsonb,
         privacy jsonb)
       WHERE t.tenant_id = u.tenant_id AND t.id = u.token_id
       RETURNING t.tenant_id, t.id, t.metadata, t.created_at),
     dropped AS (
       DELETE FROM token_metadata m USING updated
       WHERE m.tenant_id = updated.tenant_id AND m.token_id = updated.id AND NOT updated.metadata ? m.key)
     ${insertMetadataFrom('updated')}`,
    [json(last)],
  );
  await replaceSearchIndexValues(tx, last);
  await tx.query(
    `UPDATE token_associations a SET containers = u.containers, expires_at = u.expires_at
     FROM jsonb_to_recordset($1::jsonb) AS u(tenant_id uuid, token_id text, containers text[], expires_at timestamptz)
     WHERE a.tenant_id = u.tenant_id AND a.child_id = u.token_id`,
    [
      json(
        last.map(({ tenant_id, token_id, containers, expires_at }) => ({
          tenant_id,
          token_id,
          containers,
          expires_at,
        })),
      ),
    ],
  );
}

async function deleted(tx: PoolClient, events: DataOf<TokenEvent, 'TokenDeleted'>[]): Promise<void> {
  await deleteAssociationsOf(tx, events);
  await tx.query(
    `WITH gone AS (
       DELETE FROM tokens t USING jsonb_to_recordset($1::jsonb) AS d(tenant_id uuid, token_id text)
       WHERE t.tenant_id = d.tenant_id AND t.id = d.token_id
       RETURNING t.tenant_id, t.id),
     metadata_gone AS (
       DELETE FROM token_metadata m USING gone WHERE m.tenant_id = gone.tenant_id AND m.token_id = gone.id)
     DELETE FROM token_search_index s USING gone WHERE s.tenant_id = gone.tenant_id AND s.token_id = gone.id`,
    [json(events.map(({ tenant_id, token_id }) => ({ tenant_id, token_id })))],
  );
}

const ownedTables = [
  'tokens',
  'token_associations',
  'token_metadata',
  'token_child_counts',
  'token_search_index',
] as const;

/** A deleted tenant's tokens go with it (its data key is destroyed by tenancy). */
const tenantDeleted = onTenantDeleted(ownedTables);

/** Tokens, their associations and metadata entries: what a client reads back at once after a write. */
export const tokensProjection: Projection<Handled> = {
  name: 'tokens',
  tables: ownedTables,
  handles: [
    'TokenCreated',
    'TokenUpdated',
    'TokenAssociated',
    'TokenDissociated',
    'TokenDeleted',
    'TokenReencrypted',
    'TokenCvcRemoved',
    'TenantDeleted',
  ],
  async apply(events, tx) {
    for (const run of runsOfSameType(events)) {
      switch (run.type) {
        case 'TokenCreated':
          await created(tx, run.data);
          break;
        case 'TokenUpdated':
          await updated(tx, run.data);
          break;
        case 'TokenAssociated':
          await insertAssociations(tx, run.data);
          break;
        case 'TokenDissociated':
          await deleteAssociations(tx, run.data);
          break;
        case 'TokenDeleted':
          await deleted(tx, run.data);
          break;
        case 'TokenReencrypted':
          await reencrypted(tx, run.data);
          break;
        case 'TokenCvcRemoved':
          await cvcRemoved(tx, run.data);
          break;
        case 'TenantDeleted':
          await tenantDeleted(tx, run.data);
          break;
        default: {
          // Fails to compile when a type it handles has no case here.
          const unhandled: never = run;
          throw new Error(`no projection for ${(unhandled as { type: string }).type}`);
        }
      }
    }
  },
};
