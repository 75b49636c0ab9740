import { randomUUID } from 'node:crypto';
import { executeCommand, metadataOf, type ReadModelConsistency } from '@tokenvault/cqrs';
import type { EventStore, Position } from '@tokenvault/eventstore';
import { forbidden, withAdvisoryLock, type Pool, type Principal } from '@tokenvault/platform';
import { defaultContainers, type CreateTokenBody, type TokenResponse } from '@tokenvault/contracts';
import type { Vault } from '@tokenvault/vault';
import { allowedOnAll, allowedOnAny } from '../domain/access.ts';
import { tokenDecider, tokenStream, type TokenView } from '../domain/token.ts';
import { tokenFields, type TokenQueries } from '../queries/tokens.ts';

export type CreateTokenResult =
  | { created: true; token: TokenResponse; position: Position | null }
  | { created: false; token: TokenResponse };

function responseOf(view: TokenView): TokenResponse {
  return tokenFields({
    ...view,
    expires_at: view.expires_at ? new Date(view.expires_at) : null,
    created_at: new Date(view.created_at),
    modified_by: null,
    modified_at: null,
  });
}

export class TokenCommands {
  private readonly store: EventStore;
  private readonly vault: Vault;
  private readonly queries: TokenQueries;
  private readonly consistency: ReadModelConsistency;
  /** Holds the locks that make deduplicating creates of equal data run one at a time. */
  private readonly lockPool: Pool;
  constructor(
    store: EventStore,
    vault: Vault,
    queries: TokenQueries,
    consistency: ReadModelConsistency,
    lockPool: Pool,
  ) {
    this.store = store;
    this.vault = vault;
    this.queries = queries;
    this.consistency = consistency;
    this.lockPool = lockPool;
  }

  /** With a parent, the token and its association to the parent are one event. */
  async create(
    principal: Principal,
    body: CreateTokenBody,
    correlationId: string,
    parentId?: string,
  ): Promise<CreateTokenResult> {
    const containers = [...new Set(body.containers ?? [defaultContainers[body.type]])];
    if (!allowedOnAll(principal, 'token:create', containers)) {
      throw forbidden('This API key lacks token:create on the requested containers.');
    }
    const tenantId = principal.tenantId;
    const fingerprint = await this.vault.fingerprint(tenantId, body.type, body.data);
    // A caller-chosen id asks for that token, not for any equal one.
    const deduplicate =
      body.id === undefined &&
      (body.deduplicate_token ?? principal.tenantSettings.deduplicate_tokens === 'true');
    if (!deduplicate)
      return this.append(principal, body, correlationId, { containers, fingerprint, parentId });
    // Equal data is checked and created one request at a time, each waiting until its token is in
    // the read model: two identical creates at the same moment give one token, not two.
    return withAdvisoryLock(this.lockPool, `dedup:${tenantId}:${body.type}:${fingerprint}`, async () => {
      // Only a token in the same containers, and one this key may read, stands in for a new one.
      const existing = await this.queries.findByFingerprint(tenantId, body.type, fingerprint, containers);
      if (existing && allowedOnAny(principal, 'token:read', existing.containers)) {
        return { created: false, token: tokenFields(existing) };
      }
      const created = await this.append(principal, body, correlationId, {
        containers,
        fingerprint,
        parentId,
      });
      // Held until the read model has it (a generous bound: past it the projector is down).
      if (created.created && created.position) await this.consistency.waitFor(created.position, 60_000);
      return created;
    });
  }

  private async append(
    principal: Principal,
    body: CreateTokenBody,
    correlationId: string,
    fields: { containers: string[]; fingerprint: string; parentId: string | undefined },
  ): Promise<CreateTokenResult> {
    const tenantId = principal.tenantId;
    const id = body.id ?? randomUUID();
    const token: TokenView = {
      id,
      tenant_id: tenantId,
      type: body.type,
      data_ciphertext: await this.vault.encrypt(tenantId, id, body.data),
      containers: fields.containers,
      metadata: body.metadata ?? {},
      fingerprint: fields.fingerprint,
      ...(body.expires_at ? { expires_at: new Date(body.expires_at).toISOString() } : {}),
      created_by: principal.actorId,
      created_at: new Date().toISOString(),
      ...(fields.parentId === undefined ? {} : { parent_id: fields.parentId }),
    };
    const outcome = await executeCommand(
      this.store,
      tokenStream(tenantId, id),
      tokenDecider,
      { type: 'CreateToken', token },
      metadataOf(principal, correlationId),
      { newStream: true, conflictDetail: 'A token with this id exists.' },
    );
    return { created: true, token: responseOf(token), position: outcome.position };
  }

  async delete(
    principal: Principal,
    tokenId: string,
    correlationId: string,
  ): Promise<{ position: Position | null }> {
    const childIds = await this.queries.childIds(principal.tenantId, tokenId);
    const outcome = await executeCommand(
      this.store,
      tokenStream(principal.tenantId, tokenId),
      tokenDecider,
      { type: 'DeleteToken', tokenId, childIds, ...this.acting(principal) },
      metadataOf(principal, correlationId),
    );
    return { position: outcome.position };
  }

  /** Idempotent: an association already there is a success with no new event. */
  async associate(principal: Principal, parentId: string, childId: string, correlationId: string) {
    const outcome = await executeCommand(
      this.store,
      tokenStream(principal.tenantId, childId),
      tokenDecider,
      { type: 'AssociateParent', tokenId: childId, parentId, ...this.acting(principal) },
      metadataOf(principal, correlationId),
    );
    return { position: outcome.position };
  }

  async dissociate(principal: Principal, parentId: string, childId: string, correlationId: string) {
    const outcome = await executeCommand(
      this.store,
      tokenStream(principal.tenantId, childId),
      tokenDecider,
      { type: 'DissociateParent', tokenId: childId, parentId, ...this.acting(principal) },
      metadataOf(principal, correlationId),
    );
    return { position: outcome.position };
  }

  private acting(principal: Principal) {
    return {
      tenantId: principal.tenantId,
      grants: principal,
      actorId: principal.actorId,
      now: new Date().toISOString(),
    };
  }
}
