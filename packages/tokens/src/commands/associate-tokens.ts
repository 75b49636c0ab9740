import type { Position } from '@tokenvault/eventstore';
import type { Principal } from '@tokenvault/platform';
import { tokenCommandContext, type TokenCommandDeps } from './token-command-kit.ts';

/** Idempotent: an association already there is a success with no new event. */
export async function associateParent(
  deps: TokenCommandDeps,
  principal: Principal,
  parentId: string,
  childId: string,
  correlationId: string,
): Promise<{ position: Position | null }> {
  const { acting, metadata } = tokenCommandContext(principal, correlationId, deps.clock);
  const outcome = await deps.handle(
    { type: 'AssociateParent', tokenId: childId, parentId, ...acting },
    metadata,
  );
  return { position: outcome.position };
}

export async function dissociateParent(
  deps: TokenCommandDeps,
  principal: Principal,
  parentId: string,
  childId: string,
  correlationId: string,
): Promise<{ position: Position | null }> {
  const { acting, metadata } = tokenCommandContext(principal, correlationId, deps.clock);
  const outcome = await deps.handle(
    { type: 'DissociateParent', tokenId: childId, parentId, ...acting },
    metadata,
  );
  return { position: outcome.position };
}
