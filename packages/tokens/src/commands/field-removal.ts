import { DataExpressionError, evaluateDataExpression } from '@tokenvault/expressions';
import type { RecomputedFromData, TokenView } from '../domain/token.ts';
import { fingerprintSubjectOf, tokenSummariesOf } from '../domain/token-details.ts';
import type { SearchIndexSpec } from '../domain/tokens.events.ts';
import type { TokenCommandsVault } from './token-command-kit.ts';

// A field removed from a token's data (the CVC after CARD_CVC_TTL_SECONDS, and any removal to
// come) must not live on in what was computed from it while it was there: search index values,
// unique index claims, the fingerprint and its deduplication claim, the summaries
// (docs/token-types.md, "Data derived from a removed field"). Each removal recomputes all of them
// from the data it leaves, here, and its event carries them (DerivedFromData), so that they
// change in the same commit as the data.

/** An expression's value on the data left (null: nothing); `failed`: it throws there. */
function evaluated(
  expression: string,
  data: unknown,
): { failed: true } | { failed: false; value: string | null } {
  try {
    return { failed: false, value: evaluateDataExpression(expression, data) };
  } catch (error) {
    if (!(error instanceof DataExpressionError)) throw error;
    return { failed: true };
  }
}

/**
 * What `token` derives from `data` (its data after a removal), recomputed as a write would,
 * except that nothing here refuses: a search index whose expression now fails is dropped, one
 * that gives nothing indexes nothing, and a fingerprint expression that fails or gives nothing is
 * dropped (the type's own fingerprint takes its place). Values are blind indexes, as written.
 * `claimable` narrows the unique values claimed to those given (a retry when another token holds
 * one of the new values: a removal keeps only the claims the token already had).
 */
export async function recomputeFromData(
  vault: Pick<TokenCommandsVault, 'fingerprint' | 'searchIndex'>,
  token: TokenView,
  data: unknown,
  claimable?: readonly string[],
): Promise<RecomputedFromData> {
  const indexes: SearchIndexSpec[] = [];
  const values: { value: string; unique: boolean }[] = [];
  for (const index of token.search_indexes ?? []) {
    const outcome = evaluated(index.expression, data);
    if (outcome.failed) continue;
    indexes.push(index);
    const { value } = outcome;
    if (value !== null)
      values.push({ value: await vault.searchIndex(token.tenant_id, value), unique: !!index.unique });
  }
  const expressed =
    token.fingerprint_expression === undefined ? undefined : evaluated(token.fingerprint_expression, data);
  const expressedValue = expressed && !expressed.failed ? expressed.value : null;
  const keepsExpression = expressedValue !== null;
  const subject = expressedValue ?? fingerprintSubjectOf(token.type, data);
  const distinct = (list: string[]) => [...new Set(list)];
  const searchValues = distinct(values.map((entry) => entry.value));
  const uniqueValues = distinct(values.filter((entry) => entry.unique).map((entry) => entry.value)).filter(
    (value) => !claimable || claimable.includes(value),
  );
  return {
    fingerprint: await vault.fingerprint(token.tenant_id, token.type, subject),
    ...tokenSummariesOf(token.type, data),
    ...(indexes.length ? { search_indexes: indexes } : {}),
    ...(searchValues.length ? { search_index_values: searchValues } : {}),
    ...(uniqueValues.length ? { unique_index_values: uniqueValues } : {}),
    ...(keepsExpression ? { fingerprint_expression: token.fingerprint_expression } : {}),
  };
}
