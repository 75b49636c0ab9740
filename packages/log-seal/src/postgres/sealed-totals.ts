import type { Queryable } from '@tokenvault/platform';

/** How many seals and sealed events there are from a seal on: verify-log's progress total. */
export async function readSealedTotals(
  db: Queryable,
  fromNumber: number,
): Promise<{ seals: number; events: number }> {
  const { rows } = await db.query<{ seals: string; events: string }>({
    name: 'log_sealed_totals',
    text: `SELECT count(*)::text AS seals, coalesce(sum(event_count), 0)::text AS events
           FROM log_seals WHERE number >= $1`,
    values: [fromNumber],
  });
  return { seals: Number(rows[0]?.seals ?? 0), events: Number(rows[0]?.events ?? 0) };
}
