import {
  onTenantDeleted,
  type DataOf,
  type EventOf,
  type Projection,
  type TenantDeletedEvent,
} from '@tokenvault/cqrs';
import type { PoolClient } from '@tokenvault/platform';
import type { TokensContextEvent } from '../domain/tokens.events.ts';
import { runsOfSameType } from './runs.projection.ts';

/** What this projection handles: the events that count a token or make it active in a month. */
type Handled =
  | EventOf<
      TokensContextEvent,
      'TokenCreated' | 'TokenUpdated' | 'TokenDeleted' | 'TokenRead' | 'TokensRead' | 'TokensReadBatch'
    >
  | TenantDeletedEvent;

const json = (rows: unknown[]) => JSON.stringify(rows);

/** A token used (updated or read) at `at`, and when it was created (absent in events from before it). */
interface Activity {
  tenant_id: string;
  token_id: string;
  at: string;
  created_at?: string;
}

/** The calendar month (UTC) of an instant, as `YYYY-MM`. */
const monthOf = (at: string) => new Date(at).toISOString().slice(0, 7);

/**
 * Marks tokens active in the month of `at` (UTC) and counts the ones new to that month. A token is
 * always active in the month it was created in, and its creation counted it (`created`): a use in
 * that month writes nothing, so only tokens created in an earlier month get a row here, the
 * distinctness of their uses. An event from before created_at was recorded takes it from the
 * token's row (gone: deleted since, counted as a use after its creation's month).
 */
async function recordActivity(tx: PoolClient, activity: Activity[]) {
  const laterMonths = activity.filter(
    (use) => use.created_at !== undefined && monthOf(use.created_at) !== monthOf(use.at),
  );
  if (laterMonths.length) await insertActivity(tx, laterMonths, { creationFromTokenRow: false });
  const undated = activity.filter((use) => use.created_at === undefined);
  if (undated.length) await insertActivity(tx, undated, { creationFromTokenRow: true });
}

async function insertActivity(
  tx: PoolClient,
  activity: Activity[],
  { creationFromTokenRow }: { creationFromTokenRow: boolean },
) {
  const afterCreationMonth = creationFromTokenRow
    ? `LEFT JOIN tokens t ON t.tenant_id = a.tenant_id AND t.id = a.token_id
       WHERE t.created_at IS NULL
          OR date_trunc('month', t.created_at AT TIME ZONE 'UTC') <> date_trunc('month', a.at AT TIME ZONE 'UTC')`
    : '';
  await tx.query(
    `WITH activity AS (
       INSERT INTO token_monthly_activity (tenant_id, month, token_id)
       SELECT DISTINCT a.tenant_id, date_trunc('month', a.at AT TIME ZONE 'UTC')::date, a.token_id
       FROM jsonb_to_recordset($1::jsonb) AS a(tenant_id uuid, token_id text, at timestamptz)
       ${afterCreationMonth}
       ON CONFLICT DO NOTHING
       RETURNING tenant_id, month)
     INSERT INTO token_monthly_usage (tenant_id, month, active_tokens)
     SELECT tenant_id, month, count(*) FROM activity GROUP BY tenant_id, month
     ON CONFLICT (tenant_id, month) DO UPDATE SET active_tokens = token_monthly_usage.active_tokens + excluded.active_tokens`,
    [json(activity.map(({ tenant_id, token_id, at }) => ({ tenant_id, token_id, at })))],
  );
}

/**
 * The batch's creations, in one statement: each type's count and latest creation, each day's
 * count per type, and each month's active tokens (a token is active in the month it is created
 * in; no row of its own, see recordActivity).
 */
async function created(tx: PoolClient, events: DataOf<TokensContextEvent, 'TokenCreated'>[]): Promise<void> {
  await tx.query(
    `WITH created AS MATERIALIZED (
       SELECT t.tenant_id, t.type, t.created_at
       FROM jsonb_to_recordset($1::jsonb) AS t(tenant_id uuid, type text, created_at timestamptz)),
     types AS (
       INSERT INTO token_type_usage (tenant_id, type, count, last_created_at)
       SELECT tenant_id, type, count(*), max(created_at) FROM created GROUP BY tenant_id, type
       ON CONFLICT (tenant_id, type) DO UPDATE SET
         count = token_type_usage.count + excluded.count,
         last_created_at = greatest(token_type_usage.last_created_at, excluded.last_created_at)),
     days AS (
       INSERT INTO token_daily_creations (tenant_id, day, type, created)
       SELECT tenant_id, (created_at AT TIME ZONE 'UTC')::date, type, count(*) FROM created GROUP BY 1, 2, 3
       ON CONFLICT (tenant_id, day, type) DO UPDATE SET created = token_daily_creations.created + excluded.created)
     INSERT INTO token_monthly_usage (tenant_id, month, active_tokens)
     SELECT tenant_id, date_trunc('month', created_at AT TIME ZONE 'UTC')::date, count(*) FROM created GROUP BY 1, 2
     ON CONFLICT (tenant_id, month) DO UPDATE SET active_tokens = token_monthly_usage.active_tokens + excluded.active_tokens`,
    [json(events.map(({ tenant_id, type, created_at }) => ({ tenant_id, type, created_at })))],
  );
}

async function deleted(tx: PoolClient, events: DataOf<TokensContextEvent, 'TokenDeleted'>[]): Promise<void> {
  await tx.query(
    `UPDATE token_type_usage u SET count = u.count - d.deleted
     FROM (SELECT tenant_id, type, count(*) AS deleted
           FROM jsonb_to_recordset($1::jsonb) AS t(tenant_id uuid, type text) GROUP BY tenant_id, type) d
     WHERE u.tenant_id = d.tenant_id AND u.type = d.type`,
    [json(events.map(({ tenant_id, type }) => ({ tenant_id, type })))],
  );
}

const ownedTables = [
  'token_type_usage',
  'token_monthly_activity',
  'token_monthly_usage',
  'token_daily_creations',
] as const;

const tenantDeleted = onTenantDeleted(ownedTables);

/**
 * The usage report: tokens per type, tokens created per day and type, and the tokens active each month (created, updated, read or
 * used). Counters many writers share: written by the projector, never in a write's transaction,
 * where every create of a tenant would queue on one row.
 */
export const tokenUsageProjection: Projection<Handled> = {
  name: 'token-usage',
  tables: ownedTables,
  handles: [
    'TokenCreated',
    'TokenUpdated',
    'TokenDeleted',
    'TokenRead',
    'TokensRead',
    'TokensReadBatch',
    'TenantDeleted',
  ],
  async apply(events, tx) {
    for (const run of runsOfSameType(events)) {
      switch (run.type) {
        case 'TokenCreated':
          await created(tx, run.data);
          break;
        case 'TokenUpdated':
          await recordActivity(
            tx,
            run.data.map((event) => ({
              tenant_id: event.tenant_id,
              token_id: event.token_id,
              at: event.modified_at,
              ...(event.created_at ? { created_at: event.created_at } : {}),
            })),
          );
          break;
        case 'TokenDeleted':
          await deleted(tx, run.data);
          break;
        case 'TokenRead':
          await recordActivity(
            tx,
            run.data.map((event) => ({
              tenant_id: event.tenant_id,
              token_id: event.token_id,
              at: event.read_at,
            })),
          );
          break;
        case 'TokensRead':
          await recordActivity(
            tx,
            run.data.flatMap((event) =>
              event.tokens.map((token) => ({
                tenant_id: event.tenant_id,
                token_id: token.token_id,
                at: event.read_at,
              })),
            ),
          );
          break;
        case 'TokensReadBatch':
          await recordActivity(
            tx,
            run.data.flatMap((event) =>
              event.reads.flatMap((read) =>
                read.tokens.map((token) => ({
                  tenant_id: read.tenant_id,
                  token_id: token.token_id,
                  at: read.read_at,
                  ...(token.created_at ? { created_at: token.created_at } : {}),
                })),
              ),
            ),
          );
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
