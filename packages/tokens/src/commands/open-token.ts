import { aggregateStream } from '@tokenvault/cqrs';
import type { EventStore } from '@tokenvault/eventstore';
import type { Principal } from '@tokenvault/platform';
import { DecryptionError, TokenKeyDestroyedError, type Vault } from '@tokenvault/vault';
import { tokenStream } from '../domain/events.ts';
import { tokenDecider } from '../domain/token.ts';
import { tokenFields, type TokenRow } from '../queries/tokens.ts';
import type { ReadAuditor } from './read-audit.ts';

/**
 * A token's data from its read-model row. The row can trail a re-encryption (the projector has not
 * applied TokenReencrypted yet, or this process still holds the replaced key): its ciphertext no
 * longer opens, and the token's stream, which has the current one, answers instead.
 */
async function openToken(
  deps: { store: EventStore; vault: Vault },
  row: { tenant_id: string; id: string; data_ciphertext: string },
): Promise<unknown> {
  let failure: unknown;
  try {
    return await deps.vault.decrypt(row.tenant_id, row.id, row.data_ciphertext);
  } catch (error) {
    if (!(error instanceof DecryptionError) || !row.data_ciphertext.startsWith('tk:')) throw error;
    failure = error;
  }
  const { state, events } = await aggregateStream(
    deps.store,
    tokenStream(row.tenant_id, row.id),
    tokenDecider,
  );
  // Only an older ciphertext of this very token is a lagging row; anything else stays an error.
  const stale = events.some(
    (event) => (event.data as { data_ciphertext?: string }).data_ciphertext === row.data_ciphertext,
  );
  if (!stale) throw failure;
  if (state.status !== 'live') throw new TokenKeyDestroyedError();
  return deps.vault.decrypt(row.tenant_id, row.id, state.token.data_ciphertext);
}

/**
 * A page of one tenant's tokens opened: their keys are loaded in one query first (not one per
 * token), then each opens as openToken does. In the order of the rows.
 */
async function openTokens(
  deps: { store: EventStore; vault: Vault },
  rows: readonly { tenant_id: string; id: string; data_ciphertext: string }[],
): Promise<unknown[]> {
  const idsByTenant = new Map<string, string[]>();
  for (const row of rows) {
    if (!row.data_ciphertext.startsWith('tk:')) continue;
    idsByTenant.set(row.tenant_id, [...(idsByTenant.get(row.tenant_id) ?? []), row.id]);
  }
  await Promise.all([...idsByTenant].map(([tenantId, ids]) => deps.vault.loadTokenKeys(tenantId, ids)));
  return Promise.all(rows.map((row) => openToken(deps, row)));
}

/**
 * Tokens opened for a reader: their response fields with their data, in the order of the rows.
 * The reads are on record before the data leaves.
 */
export async function openForReader(
  deps: { store: EventStore; vault: Vault; readAuditor: ReadAuditor },
  principal: Principal,
  rows: readonly TokenRow[],
  requestId: string,
) {
  const opened = await openTokens(deps, rows);
  const tokens = rows.map((row, index) => ({ ...tokenFields(row), data: opened[index] }));
  await deps.readAuditor.record(
    principal,
    rows.map((row) => ({ tokenId: row.id, type: row.type })),
    requestId,
  );
  return tokens;
}
