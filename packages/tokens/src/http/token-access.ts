import { forbidden, notFound, type Clock, type Pool, type Principal } from '@tokenvault/platform';
import type { ReadModelConsistency } from '@tokenvault/cqrs';
import type { EventStore } from '@tokenvault/eventstore';
import type { Vault } from '@tokenvault/vault';
import { openForReader } from '../commands/open-token.ts';
import type { ReadAuditor } from '../commands/read-audit.ts';
import type { TokenCommands } from '../commands/tokens.commands.ts';
import { allowedOnAll, allowedOnAny, readableContainers, readTransform } from '../domain/access.ts';
import { readTargetOf, type TokenQueries, type TokenRow } from '../queries/tokens.queries.ts';

// What the token routes of every resource share: the process's queries and commands, the check
// that a token is the caller's and allowed, and the opening of tokens for a reader (on record first).

export interface TokenRouteDeps {
  store: EventStore;
  appPool: Pool;
  vault: Vault;
  consistency: ReadModelConsistency;
  /** The plan's monthly active tokens, shown in the usage report. */
  includedMonthlyActiveTokens: number;
  /** Every timestamp and expiry check of tokens. */
  clock: Clock;
  /** The process's one set of token queries (the detokenizer's too). */
  tokenQueries: TokenQueries;
  /**
   * The process's token commands, built with its runtime base: the gateway's token routes and
   * the worker's (reactors' `svc` calls) share them.
   */
  tokenCommands: Pick<
    TokenCommands,
    | 'create'
    | 'createFromIntent'
    | 'tokenize'
    | 'update'
    | 'delete'
    | 'associate'
    | 'dissociate'
    | 'cardCvcTtlSeconds'
  >;
  /** The process's one read auditor: every read of the process in one group commit. */
  readAuditor: ReadAuditor;
}

/** The containers under which the key may read, from its rules; null when it may read them all. */
export const readableUnder = (principal: Principal) => readableContainers(principal, 'token:read');

export type TokenAccess = ReturnType<typeof tokenAccess>;

/**
 * 404 unless the token (as its tenant's read model has it, or undefined) is live, 403 unless the
 * caller holds the permission on any (or all) of its containers (a read: unless some rule decides
 * what it shows, readTransform).
 */
export function checkTokenAccess(
  principal: Principal,
  id: string,
  token: Pick<TokenRow, 'containers' | 'type' | 'privacy'> | undefined,
  permission: string,
  mode: 'any' | 'all' = 'any',
): asserts token {
  if (!token) throw notFound('No token with this id.');
  const allowed =
    mode === 'all'
      ? allowedOnAll(principal, permission, token.containers)
      : permission === 'token:read'
        ? readTransform(principal, permission, readTargetOf(token)) !== undefined
        : allowedOnAny(principal, permission, token.containers);
  if (!allowed) {
    throw forbidden(`This API key lacks ${permission} on the containers of token ${id}.`);
  }
}

export function tokenAccess(deps: TokenRouteDeps) {
  const { store, vault, readAuditor } = deps;
  const queries = deps.tokenQueries;
  const commands = deps.tokenCommands;

  /** A live token of the caller's tenant on which the caller holds the permission, or 404/403. */
  const tokenFor = async (
    principal: Principal,
    id: string,
    permission: string,
    mode: 'any' | 'all' = 'any',
  ) => {
    const row = await queries.get(principal.tenantId, id);
    checkTokenAccess(principal, id, row, permission, mode);
    return row;
  };

  /**
   * Opens tokens for a reader, each shown as the caller's deciding rule says (its data, its mask
   * or nothing); the reads are on record before the data leaves.
   */
  const withData = (principal: Principal, rows: TokenRow[], requestId: string) =>
    openForReader({ store, vault, readAuditor }, principal, rows, requestId, (row) =>
      readTransform(principal, 'token:read', readTargetOf(row)),
    );
  return { queries, commands, tokenFor, withData };
}
