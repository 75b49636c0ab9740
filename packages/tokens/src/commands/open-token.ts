import { aggregateStream } from '@tokenvault/cqrs';
import type { EventStore } from '@tokenvault/eventstore';
import type { Principal } from '@tokenvault/platform';
import type { AccessTransform } from '@tokenvault/contracts';
import { DecryptionError, TokenKeyDestroyedError, type Vault } from '@tokenvault/vault';
import { tokenStream } from '../domain/tokens.events.ts';
import { tokenDecider } from '../domain/token.ts';
import { summariesShown } from '../domain/token-details.ts';
import { maskedData, maskOf } from '../domain/token-mask.ts';
import { tokenFields, type TokenRow } from '../queries/tokens.queries.ts';
import type { ReadAuditor } from './read-audit.ts';

/**
 * A token's data from its read-model row, opened with the key the row came with (no query when
 * that key is not in memory yet). The row can trail a re-encryption (the projector has not
 * applied TokenReencrypted yet, or this process still holds the replaced key): its ciphertext no
 * longer opens, and the token's stream, which has the current one, answers instead.
 */
async function openToken(deps: { store: EventStore; vault: Vault }, row: TokenRow): Promise<unknown> {
  let failure: unknown;
  try {
    const storedKey =
      row.wrapped_key === null || row.tenant_key_version === null
        ? null
        : { wrappedKey: row.wrapped_key, tenantKeyVersion: row.tenant_key_version };
    return await deps.vault.decrypt(row.tenant_id, row.id, row.data_ciphertext, storedKey);
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
 * Tokens opened for a reader, in the order of the rows, each shown as `decide` says: `reveal`
 * with its data, `mask` with its mask in place of the data (no data when it has none), `redact`
 * without data; a row `decide` gives no access to is left out (a list's SQL filter is wider than
 * the decision for the restriction policy's rows). Only what is shown is opened. The reads are
 * on record before anything leaves.
 */
export async function openForReader(
  deps: { store: EventStore; vault: Vault; readAuditor: ReadAuditor },
  principal: Principal,
  rows: readonly TokenRow[],
  requestId: string,
  decide: (row: TokenRow) => AccessTransform | undefined,
) {
  const shown = rows.flatMap((row) => {
    const transform = decide(row);
    return transform ? [{ row, transform }] : [];
  });
  const tokens = await Promise.all(
    shown.map(async ({ row, transform }) => {
      // Its summaries as the decision shows them (a masked card's BIN is six digits).
      const fields = summariesShown(tokenFields(row), transform);
      if (transform === 'redact') return fields;
      const mask = transform === 'mask' ? maskOf(row.type, row.mask) : undefined;
      // A masked token without a mask shows nothing: its data is not even opened.
      if (transform === 'mask' && mask === undefined) return fields;
      const data = await openToken(deps, row);
      if (transform === 'reveal') return { ...fields, data };
      const masked = maskedData(mask, data, row.type);
      return masked === undefined ? fields : { ...fields, data: masked };
    }),
  );
  await deps.readAuditor.record(
    principal,
    shown.map(({ row, transform }) => ({
      tokenId: row.id,
      type: row.type,
      createdAt: row.created_at,
      transform,
    })),
    requestId,
  );
  return tokens;
}
