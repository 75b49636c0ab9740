import type { TokenResponse } from '@tokenvault/contracts';
import type { TokenView } from '../domain/token.ts';
import { tokenFields } from '../queries/tokens.queries.ts';

/** A token as a command's response shows it: the same fields as a read of the read model. */
export function tokenResponseOf(view: TokenView): TokenResponse {
  return tokenFields({
    ...view,
    expires_at: view.expires_at ? new Date(view.expires_at) : null,
    created_at: new Date(view.created_at),
    modified_by: view.modified_by ?? null,
    modified_at: view.modified_at ? new Date(view.modified_at) : null,
    privacy: view.privacy ?? null,
    mask: view.mask ?? null,
    card: view.card ?? null,
    bank: view.bank ?? null,
    search_indexes: view.search_indexes ?? null,
    fingerprint_expression: view.fingerprint_expression ?? null,
  });
}
