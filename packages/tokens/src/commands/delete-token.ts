import type { Position } from '@tokenvault/eventstore';
import type { Principal } from '@tokenvault/platform';
import { tokenCommandContext, type TokenCommandDeps } from './token-command-kit.ts';

/** Deletes a token, its key, and its associations to its children. */
export async function deleteToken(
  deps: TokenCommandDeps,
  principal: Principal,
  tokenId: string,
  correlationId: string,
): Promise<{ position: Position | null }> {
  const childIds = await deps.queries.childIds(principal.tenantId, tokenId);
  const { acting, metadata } = tokenCommandContext(principal, correlationId, deps.clock);
  const outcome = await deps.handle({ type: 'DeleteToken', tokenId, childIds, ...acting }, metadata);
  // Its key was destroyed with the append; other processes forget it at the commit's NOTIFY.
  deps.vault.forgetToken(principal.tenantId, tokenId);
  return { position: outcome.position };
}
