import { randomUUID } from 'node:crypto';
import {
  aggregateStream,
  commandContext,
  defaultCommandAttempts,
  metadataOf,
  type CommandHandler,
} from '@tokenvault/cqrs';
import { UniqueClaimTaken, type EventStore, type Position } from '@tokenvault/eventstore';
import {
  badRequest,
  conflict,
  forbidden,
  notFound,
  type Clock,
  type FieldErrors,
  type Principal,
} from '@tokenvault/platform';
import {
  defaultContainers,
  tokenDataIssues,
  type CreateTokenBody,
  type TokenResponse,
  type UpdateTokenBody,
} from '@tokenvault/contracts';
import type { SealedToken, Vault } from '@tokenvault/vault';
import { allowedOnAll, allowedOnAny } from '../domain/access.ts';
import { mergePatch } from '../domain/merge-patch.ts';
import { tokenStream, type TokenEvent, type TokenUpdate } from '../domain/tokens.events.ts';
import {
  StaleDataBasis,
  tokenDecider,
  type TokenCommand,
  type TokenPatch,
  type TokenState,
  type TokenView,
} from '../domain/token.ts';
import { tokenIdOfHolder } from '../domain/tokens.uniqueness.ts';
import { tokenKeysSideData } from '../projections/token-keys.projection.ts';
import { tokenCommandHandler } from './token-handler.ts';
import { tokenFields, type TokenQueries } from '../queries/tokens.queries.ts';

export type CreateTokenResult =
  | { created: true; token: TokenResponse; position: Position | null }
  | { created: false; token: TokenResponse };

function responseOf(view: TokenView): TokenResponse {
  return tokenFields({
    ...view,
    expires_at: view.expires_at ? new Date(view.expires_at) : null,
    created_at: new Date(view.created_at),
    modified_by: view.modified_by ?? null,
    modified_at: view.modified_at ? new Date(view.modified_at) : null,
  });
}

/** What the token commands use of the vault: sealing, fingerprints, and the token keys it holds in memory. */
export type TokenCommandsVault = Pick<
  Vault,
  'sealToken' | 'keepTokenKey' | 'fingerprint' | 'decrypt' | 'forgetToken'
>;

export class TokenCommands {
  private readonly store: EventStore;
  private readonly vault: TokenCommandsVault;
  private readonly queries: Pick<TokenQueries, 'findByFingerprint' | 'childIds'>;
  private readonly clock: Clock;
  private readonly handle: CommandHandler<TokenState, TokenCommand, TokenEvent>;
  constructor(
    store: EventStore,
    vault: TokenCommandsVault,
    queries: Pick<TokenQueries, 'findByFingerprint' | 'childIds'>,
    clock: Clock,
  ) {
    this.store = store;
    this.vault = vault;
    this.queries = queries;
    this.clock = clock;
    this.handle = tokenCommandHandler(store);
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
    const fields = { containers, fingerprint, parentId };
    if (!deduplicate) return this.append(principal, body, correlationId, fields);
    // Only a token in the same containers, and one this key may read, stands in for a new one. The
    // read model finds one made before (with or without deduplication); the claim the new token
    // takes in its own append finds one made at the same moment, however far behind the read model.
    const existing = await this.queries.findByFingerprint(tenantId, body.type, fingerprint, containers);
    if (existing && allowedOnAny(principal, 'token:read', existing.containers)) {
      return { created: false, token: tokenFields(existing) };
    }
    let claimTakenFrom: string | undefined;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.append(principal, body, correlationId, {
          ...fields,
          deduplicated: true,
          claimTakenFrom,
        });
      } catch (error) {
        if (!(error instanceof UniqueClaimTaken)) throw error;
        const holderId = tokenIdOfHolder(error.holder);
        const holder = await this.liveToken(tenantId, holderId);
        if (holder && allowedOnAny(principal, 'token:read', holder.containers)) {
          return { created: false, token: responseOf(holder) };
        }
        // The holder expired: the new token takes its claim over (a concurrent twin doing the
        // same then finds the claim taken by this one, and answers it).
        if (!holder && attempt === 1) {
          claimTakenFrom = holderId;
          continue;
        }
        // The data's holder is not this key's to see: a token of its own, as a create by such a
        // key makes (it cannot hold the claim).
        return this.append(principal, body, correlationId, fields);
      }
    }
  }

  /** A live token (not deleted, not expired) as its stream has it now. */
  private async liveToken(tenantId: string, tokenId: string): Promise<TokenView | undefined> {
    const { state } = await aggregateStream(this.store, tokenStream(tenantId, tokenId), tokenDecider);
    if (state.status !== 'live') return undefined;
    const expiresAt = state.token.expires_at;
    return expiresAt && Date.parse(expiresAt) <= this.clock.now().getTime() ? undefined : state.token;
  }

  private async append(
    principal: Principal,
    body: CreateTokenBody,
    correlationId: string,
    fields: {
      containers: string[];
      fingerprint: string;
      parentId: string | undefined;
      deduplicated?: true;
      /** An expired token whose claim on the data this one takes over. */
      claimTakenFrom?: string | undefined;
    },
  ): Promise<CreateTokenResult> {
    const tenantId = principal.tenantId;
    const id = body.id ?? randomUUID();
    const sealed = await this.vault.sealToken(tenantId, id, body.data, {
      expiresAt: body.expires_at ? new Date(body.expires_at).toISOString() : null,
    });
    const token: TokenView = {
      id,
      tenant_id: tenantId,
      type: body.type,
      data_ciphertext: sealed.ciphertext,
      containers: fields.containers,
      metadata: body.metadata ?? {},
      fingerprint: fields.fingerprint,
      ...(body.expires_at ? { expires_at: new Date(body.expires_at).toISOString() } : {}),
      created_by: principal.actorId,
      created_at: this.clock.now().toISOString(),
      ...(fields.parentId === undefined ? {} : { parent_id: fields.parentId }),
      ...(fields.deduplicated ? { deduplicated: true } : {}),
      ...(fields.claimTakenFrom ? { claim_taken_from: fields.claimTakenFrom } : {}),
    };
    // The new key goes with the append (its side data), which stores it with the event.
    const outcome = await this.handle({ type: 'CreateToken', token }, metadataOf(principal, correlationId), {
      newStream: true,
      conflictDetail: 'A token with this id exists.',
      sideData: tokenKeysSideData([sealed]),
    });
    // Stored: the key stays in memory, so that reading the token back needs no query for its key.
    if (outcome.position !== null && sealed.newKey) this.vault.keepTokenKey(sealed.newKey);
    return { created: true, token: responseOf(token), position: outcome.position };
  }

  /**
   * A merge patch of a live token (docs/decisions.md, Tokens). The data is merged here, where it
   * can be opened, then checked by the token's type, sealed and fingerprinted; the decider merges
   * the rest and checks the permissions. Everything that can refuse the update runs before
   * anything is appended. With the tenant deduplicating, an update that would make the token equal
   * to another one this key may read is a 409 naming it.
   */
  async update(
    principal: Principal,
    tokenId: string,
    body: UpdateTokenBody,
    correlationId: string,
  ): Promise<{ token: TokenResponse; position: Position | null }> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.updateOnce(principal, tokenId, body, correlationId);
      } catch (error) {
        // Another update changed the data this patch was merged into: merge into the new data.
        if (!(error instanceof StaleDataBasis) || attempt >= defaultCommandAttempts) throw error;
      }
    }
  }

  private async updateOnce(
    principal: Principal,
    tokenId: string,
    body: UpdateTokenBody,
    correlationId: string,
  ): Promise<{ token: TokenResponse; position: Position | null }> {
    const tenantId = principal.tenantId;
    const stream = tokenStream(tenantId, tokenId);
    const { state } = await aggregateStream(this.store, stream, tokenDecider);
    if (state.status !== 'live') throw notFound('No token with this id.');
    const current = state.token;
    const patch: TokenPatch = {
      ...(body.metadata === undefined ? {} : { metadata: body.metadata }),
      ...(body.containers === undefined ? {} : { containers: body.containers }),
      ...(body.expires_at === undefined ? {} : { expires_at: body.expires_at }),
    };
    const { acting, metadata } = this.context(principal, correlationId);
    const commandOf = (prepared: TokenPatch) => ({
      type: 'UpdateToken' as const,
      tokenId,
      patch: prepared,
      ...acting,
    });
    let sealed: SealedToken | undefined;
    // Permissions (and the rest of the patch) first: a key that may not update the token learns
    // nothing from checks of the data it would lead to.
    tokenDecider.decide(commandOf(patch), state);
    if (body.data !== undefined) {
      const merged = mergePatch(
        await this.vault.decrypt(tenantId, tokenId, current.data_ciphertext),
        body.data,
      );
      const issues = tokenDataIssues(current.type, merged);
      if (issues.length) {
        const errors: FieldErrors = {};
        for (const issue of issues) {
          (errors[['body', ...(issue.path ?? []).map(String)].join('.')] ??= []).push(
            issue.message ?? 'Invalid',
          );
        }
        throw badRequest(
          `The data the patch leads to is not valid ${current.type} data; see errors.`,
          errors,
        );
      }
      const fingerprint = await this.vault.fingerprint(tenantId, current.type, merged);
      if (fingerprint !== current.fingerprint) {
        sealed = await this.vault.sealToken(tenantId, tokenId, merged, {
          reuseKeyOf: current.data_ciphertext,
        });
      }
      patch.data = {
        basis: current.data_ciphertext,
        data_ciphertext: sealed ? sealed.ciphertext : current.data_ciphertext,
        fingerprint,
      };
    }
    // A new token key made for this update (a token sealed before token keys) goes with the append.
    const sideData = tokenKeysSideData([sealed]);
    const command = commandOf(patch);
    const planned = tokenDecider.decide(command, state);
    if (planned.length === 0) return { token: responseOf(current), position: null };
    const execute = async (deduplicate: boolean) => {
      const outcome = await this.handle({ ...command, deduplicate }, metadata, { sideData });
      const after = outcome.state.status === 'live' ? outcome.state.token : current;
      return { token: responseOf(after), position: outcome.position };
    };
    const update = planned[0]!.data as TokenUpdate;
    if (principal.tenantSettings.deduplicate_tokens !== 'true' || !update.data_claim)
      return await execute(false);
    // Only a token this key may read is named (and refuses the update): for any other, a 409
    // would tell a key what data a token it cannot read holds. Those updates go through, as a
    // create by such a key makes a new token (without the claim on the data).
    const refuse = (holderId: string) =>
      conflict(
        `Token ${holderId} already holds this data in these containers, and the tenant deduplicates tokens: use that token, or delete one of them first.`,
      );
    const existing = await this.queries.findByFingerprint(
      tenantId,
      current.type,
      update.fingerprint,
      update.containers,
      tokenId,
    );
    if (existing && allowedOnAny(principal, 'token:read', existing.containers)) throw refuse(existing.id);
    try {
      return await execute(true);
    } catch (error) {
      if (!(error instanceof UniqueClaimTaken)) throw error;
      const holderId = tokenIdOfHolder(error.holder);
      const holder = await this.liveToken(tenantId, holderId);
      if (holder && allowedOnAny(principal, 'token:read', holder.containers)) throw refuse(holderId);
      return await execute(false);
    }
  }

  async delete(
    principal: Principal,
    tokenId: string,
    correlationId: string,
  ): Promise<{ position: Position | null }> {
    const childIds = await this.queries.childIds(principal.tenantId, tokenId);
    const { acting, metadata } = this.context(principal, correlationId);
    const outcome = await this.handle({ type: 'DeleteToken', tokenId, childIds, ...acting }, metadata);
    // Its key was destroyed with the append; other processes forget it at the commit's NOTIFY.
    this.vault.forgetToken(principal.tenantId, tokenId);
    return { position: outcome.position };
  }

  /** Idempotent: an association already there is a success with no new event. */
  async associate(principal: Principal, parentId: string, childId: string, correlationId: string) {
    const { acting, metadata } = this.context(principal, correlationId);
    const outcome = await this.handle(
      { type: 'AssociateParent', tokenId: childId, parentId, ...acting },
      metadata,
    );
    return { position: outcome.position };
  }

  async dissociate(principal: Principal, parentId: string, childId: string, correlationId: string) {
    const { acting, metadata } = this.context(principal, correlationId);
    const outcome = await this.handle(
      { type: 'DissociateParent', tokenId: childId, parentId, ...acting },
      metadata,
    );
    return { position: outcome.position };
  }

  /** The caller's command context, with the grants a token command is checked against. */
  private context(principal: Principal, correlationId: string) {
    const { acting, metadata } = commandContext(principal, correlationId, this.clock);
    return { acting: { ...acting, grants: principal }, metadata };
  }
}
