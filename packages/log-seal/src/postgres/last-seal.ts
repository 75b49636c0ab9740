import type { Queryable } from '@tokenvault/platform';
import type { Seal } from '../seal.ts';
import { sealColumns, toSeal, type SealRow } from './seal-row.ts';

/** The newest seal: the chain continues from it. */
export async function readLastSeal(db: Queryable): Promise<Seal | undefined> {
  const { rows } = await db.query<SealRow>({
    name: 'log_last_seal',
    text: `SELECT ${sealColumns} FROM log_seals s ORDER BY s.number DESC LIMIT 1`,
  });
  return rows[0] && toSeal(rows[0]);
}
