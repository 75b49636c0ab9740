import type { Queryable } from '@tokenvault/platform';
import type { Seal } from '../seal.ts';
import { sealColumns, toSeal, type SealRow } from './seal-row.ts';

/** Seals from `fromNumber` on, in chain order. */
export async function readSeals(db: Queryable, fromNumber: number, limit: number): Promise<Seal[]> {
  const { rows } = await db.query<SealRow>({
    name: 'log_read_seals',
    text: `SELECT ${sealColumns} FROM log_seals s WHERE s.number >= $1 ORDER BY s.number LIMIT $2`,
    values: [fromNumber, limit],
  });
  return rows.map(toSeal);
}
