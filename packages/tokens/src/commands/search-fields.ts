import { badRequest, type FieldErrors } from '@tokenvault/platform';
import { DataExpressionError, evaluateDataExpression } from '@tokenvault/expressions';
import type { SearchIndex, TokenType } from '@tokenvault/contracts';
import { fingerprintSubjectOf } from '../domain/token-details.ts';
import type { SearchIndexSpec, TokenSearchFields } from '../domain/tokens.events.ts';
import type { TokenCommandsVault } from './token-command-kit.ts';

/** A search index as events record it, from either form a body gives. */
export const searchIndexSpecOf = (index: SearchIndex): SearchIndexSpec =>
  typeof index === 'string'
    ? { expression: index }
    : { expression: index.expression, ...(index.unique ? { unique: true as const } : {}) };

/**
 * How the failures of expressions on the data are answered. `tell`: a 400 naming each failing
 * expression, for a caller whose data it is (a create) or whose rules reveal the token. `untold`:
 * for a caller who may not read the data (an update-only or a masked key patching a token's data
 * under expressions a revealing key set), nothing that depends on the data: a failing search index
 * indexes nothing, a failing fingerprint expression gives way to the type's own subject, and the
 * write goes through (docs/security.md, "One rule for expressions on stored data").
 */
export type ExpressionFailures = 'tell' | 'untold';

/**
 * What a token is found and deduplicated by, from its (checked) data, the time it is written:
 * each search index evaluated and kept as its blind index only (HMAC under the tenant's search
 * key; the plaintext value never leaves this function), and the fingerprint of what its
 * fingerprint expression gives (the type's own subject without one). An expression that fails is
 * a 400 naming it (`tell`, see ExpressionFailures); one that gives nothing for this data indexes
 * nothing.
 */
export async function searchFieldsOf(
  vault: Pick<TokenCommandsVault, 'fingerprint' | 'searchIndex'>,
  tenantId: string,
  type: TokenType,
  data: unknown,
  indexes: readonly SearchIndexSpec[],
  fingerprintExpression: string | undefined,
  failures: ExpressionFailures = 'tell',
): Promise<{ search: TokenSearchFields; fingerprint: string }> {
  const errors: FieldErrors = {};
  const evaluate = (expression: string, field: string): string | null => {
    try {
      return evaluateDataExpression(expression, data);
    } catch (error) {
      if (!(error instanceof DataExpressionError)) throw error;
      (errors[field] ??= []).push(error.message);
      return null;
    }
  };
  const values = indexes.map((index, position) =>
    evaluate(index.expression, `body.search_indexes.${position}`),
  );
  let subject =
    fingerprintExpression === undefined
      ? fingerprintSubjectOf(type, data)
      : evaluate(fingerprintExpression, 'body.fingerprint_expression');
  if (failures === 'untold') {
    subject ??= fingerprintSubjectOf(type, data);
  } else if (
    fingerprintExpression !== undefined &&
    subject === null &&
    !errors['body.fingerprint_expression']
  ) {
    errors['body.fingerprint_expression'] = ['Gives nothing for this data: nothing to deduplicate by'];
  }
  if (failures === 'tell' && Object.keys(errors).length > 0) {
    throw badRequest(
      'Some search index or fingerprint expressions could not be evaluated; see errors.',
      errors,
    );
  }
  const blind = await Promise.all(
    values.map(async (value) => (value === null ? null : vault.searchIndex(tenantId, value))),
  );
  const distinct = (list: (string | null)[]) => [...new Set(list.filter((item) => item !== null))];
  const search: TokenSearchFields = {
    ...(indexes.length ? { search_indexes: [...indexes] } : {}),
    ...(distinct(blind).length ? { search_index_values: distinct(blind) } : {}),
    ...(distinct(blind.filter((_, position) => indexes[position]!.unique)).length
      ? { unique_index_values: distinct(blind.filter((_, position) => indexes[position]!.unique)) }
      : {}),
    ...(fingerprintExpression === undefined ? {} : { fingerprint_expression: fingerprintExpression }),
  };
  return { search, fingerprint: await vault.fingerprint(tenantId, type, subject) };
}
