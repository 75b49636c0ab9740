import { badRequest, forbidden, type Principal } from '@tokenvault/platform';
import type { EventStore } from '@tokenvault/eventstore';
import type { Vault } from '@tokenvault/vault';
import { useTransform } from '../domain/access.ts';
import type { TokenQueries } from '../queries/tokens.queries.ts';
import type { ReadAuditor } from './read-audit.ts';
import { openForReader } from './open-token.ts';

export interface DetokenizerDeps {
  store: EventStore;
  vault: Vault;
  tokenQueries: TokenQueries;
  readAuditor: ReadAuditor;
}

/**
 * Opens tokens for code that runs on their data (a reactor, a proxy): the caller needs the
 * permission on every container of every token, each shown as the least revealing of the rules
 * deciding on its containers (useTransform: the data, its mask, or null), unknown ids are named in a 400 (a missing token and another
 * tenant's look the same), and every opened token is on record as read before its data leaves.
 */
export class Detokenizer {
  private readonly queries: TokenQueries;
  private readonly deps: DetokenizerDeps;

  /** The queries and the read auditor are the process's (the token routes' too: one group commit). */
  constructor(deps: DetokenizerDeps) {
    this.deps = deps;
    this.queries = deps.tokenQueries;
  }

  /**
   * Whether every one of these tokens is live (not deleted, not expired), as the read model has
   * them, and, with `seenAt`, still holds all it held then: no CVC was removed since.
   */
  async allLive(tenantId: string, ids: readonly string[], seenAt?: Date): Promise<boolean> {
    const unique = [...new Set(ids)];
    const rows = await this.queries.getMany(tenantId, unique);
    if (rows.length !== unique.length) return false;
    return (
      !seenAt || rows.every((row) => !row.cvc_removed_at || row.cvc_removed_at.getTime() < seenAt.getTime())
    );
  }

  /**
   * The tokens' data by id, and the whole tokens (response fields with their data) by id: what
   * `{{ <id> }}` and `{{ token: <id> }}` expressions see.
   */
  async openTokens(
    principal: Principal,
    ids: readonly string[],
    permission: string,
    requestId: string,
    field: string,
  ): Promise<{ data: Map<string, unknown>; tokens: Map<string, unknown> }> {
    const rows = await this.queries.getMany(principal.tenantId, ids);
    const found = new Map(rows.map((row) => [row.id, row]));
    const missing = ids.filter((id) => !found.has(id));
    if (missing.length) {
      throw badRequest('Some detokenization expressions name no token.', {
        [field]: missing.map((id) => `No token with id ${id}`),
      });
    }
    const transforms = new Map(
      rows.map((row) => [row.id, useTransform(principal, permission, row.containers)]),
    );
    const denied = rows.filter((row) => transforms.get(row.id) === undefined);
    if (denied.length) {
      throw forbidden(
        `This API key lacks ${permission} on the containers of token ${denied.map((row) => row.id).join(', ')}.`,
      );
    }
    const opened = await openForReader(this.deps, principal, rows, requestId, (row) =>
      transforms.get(row.id),
    );
    // A masked token's expressions see its mask as its data; a redacted one's see null.
    const data = new Map(opened.map((token) => [token.id, 'data' in token ? token.data : null]));
    const tokens = new Map(opened.map((token) => [token.id, token]));
    return { data, tokens };
  }
}
