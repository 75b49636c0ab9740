import { randomUUID } from 'node:crypto';
import { metadataOf } from '@tokenvault/cqrs';
import { UniqueClaimTaken, type Position } from '@tokenvault/eventstore';
import { conflict, forbidden, type Principal } from '@tokenvault/platform';
import {
  containerOfPrivacy,
  privacyOf,
  type CreateTokenBody,
  type TokenResponse,
} from '@tokenvault/contracts';
import { allowedOnAll, allowedOnAny } from '../domain/access.ts';
import type { TokenView } from '../domain/token.ts';
import { holdsCvc, tokenSummariesOf } from '../domain/token-details.ts';
import { assertMaskFits } from '../domain/token-mask.ts';
import type { TokenSearchFields } from '../domain/tokens.events.ts';
import { tokenIdOfHolder, tokenSearchIndexScope } from '../domain/tokens.uniqueness.ts';
import { tokenKeysSideData } from '../projections/token-keys.projection.ts';
import { tokenFields } from '../queries/tokens.queries.ts';
import { searchFieldsOf, searchIndexSpecOf } from './search-fields.ts';
import { liveToken, type TokenCommandDeps } from './token-command-kit.ts';
import { tokenResponseOf } from './token-response.ts';

export type CreateTokenResult =
  | { created: true; token: TokenResponse; position: Position | null }
  | { created: false; token: TokenResponse };

/**
 * Where a new token goes and what it is found by: its containers (the key needs token:create on
 * each: 403 otherwise), its fingerprint and search indexes, and whether it is deduplicated.
 */
export async function newTokenPlan(
  deps: Pick<TokenCommandDeps, 'vault'>,
  principal: Principal,
  body: CreateTokenBody,
  /** Where the request is, for a message about one of several (`body.cards.0`). */
  where?: string,
) {
  // Without containers, the token goes where its privacy says; either way the key needs
  // token:create there, so privacy never puts a token where the key could not.
  const containers = [
    ...new Set(body.containers ?? [containerOfPrivacy(privacyOf(body.type, body.privacy))]),
  ];
  if (!allowedOnAll(principal, 'token:create', containers)) {
    throw forbidden(
      `This API key lacks token:create on the requested containers${where ? ` (of the token request at ${where})` : ''}.`,
    );
  }
  if (body.mask !== undefined) assertMaskFits(body.mask, body.data);
  const { search, fingerprint } = await searchFieldsOf(
    deps.vault,
    principal.tenantId,
    body.type,
    body.data,
    (body.search_indexes ?? []).map(searchIndexSpecOf),
    body.fingerprint_expression,
  );
  // A caller-chosen id asks for that token, not for any equal one.
  const deduplicate =
    body.id === undefined &&
    (body.deduplicate_token ?? principal.tenantSettings.deduplicate_tokens === 'true');
  return { containers, fingerprint, search, deduplicate };
}

/** With a parent, the token and its association to the parent are one event. */
export async function createToken(
  deps: TokenCommandDeps,
  principal: Principal,
  body: CreateTokenBody,
  correlationId: string,
  parentId?: string,
): Promise<CreateTokenResult> {
  const { containers, fingerprint, search, deduplicate } = await newTokenPlan(deps, principal, body);
  const tenantId = principal.tenantId;
  const fields = { containers, fingerprint, parentId, search };
  if (!deduplicate) return appendNewToken(deps, principal, body, correlationId, fields);
  // Only a token in the same containers, and one this key may read, stands in for a new one. The
  // read model finds one made before (with or without deduplication); the claim the new token
  // takes in its own append finds one made at the same moment, however far behind the read model.
  const existing = await deps.queries.findByFingerprint(tenantId, body.type, fingerprint, containers);
  if (existing && allowedOnAny(principal, 'token:read', existing.containers)) {
    return { created: false, token: tokenFields(existing) };
  }
  let claimTakenFrom: string | undefined;
  for (let attempt = 1; ; attempt++) {
    try {
      return await appendNewToken(deps, principal, body, correlationId, {
        ...fields,
        deduplicated: true,
        claimTakenFrom,
      });
    } catch (error) {
      if (!(error instanceof UniqueClaimTaken)) throw error;
      const holderId = tokenIdOfHolder(error.holder);
      const holder = await liveToken(deps, tenantId, holderId);
      if (holder && allowedOnAny(principal, 'token:read', holder.containers)) {
        return { created: false, token: tokenResponseOf(holder) };
      }
      // The holder expired: the new token takes its claim over (a concurrent twin doing the
      // same then finds the claim taken by this one, and answers it).
      if (!holder && attempt === 1) {
        claimTakenFrom = holderId;
        continue;
      }
      // The data's holder is not this key's to see: a token of its own, as a create by such a
      // key makes (it cannot hold the claim).
      return appendNewToken(deps, principal, body, correlationId, fields);
    }
  }
}

/** What a create decided besides the body: where the token goes, its fingerprint and indexes. */
export interface NewTokenFields {
  containers: string[];
  fingerprint: string;
  parentId: string | undefined;
  search: TokenSearchFields;
  deduplicated?: true;
  /** An expired token whose claim on the data this one takes over. */
  claimTakenFrom?: string | undefined;
}

async function appendNewToken(
  deps: TokenCommandDeps,
  principal: Principal,
  body: CreateTokenBody,
  correlationId: string,
  fields: NewTokenFields,
): Promise<CreateTokenResult> {
  const { token, sealed } = await newTokenView(deps, principal, body, fields);
  // The new key goes with the append (its side data), which stores it with the event.
  const outcome = await deps
    .handle({ type: 'CreateToken', token }, metadataOf(principal, correlationId), {
      newStream: true,
      conflictDetail: 'A token with this id exists.',
      sideData: tokenKeysSideData([sealed]),
    })
    .catch((error: unknown) => {
      if (error instanceof UniqueClaimTaken && error.scope === tokenSearchIndexScope)
        throw uniqueIndexTaken();
      throw error;
    });
  // Stored: the key stays in memory, so that reading the token back needs no query for its key.
  if (outcome.position !== null && sealed.newKey) deps.vault.keepTokenKey(sealed.newKey);
  return { created: true, token: tokenResponseOf(token), position: outcome.position };
}

/** What a new token's event holds, its data sealed under a key of its own (the key in `sealed`). */
export async function newTokenView(
  deps: Pick<TokenCommandDeps, 'vault' | 'clock' | 'cardCvcTtlSeconds'>,
  principal: Principal,
  body: CreateTokenBody,
  fields: NewTokenFields,
) {
  const tenantId = principal.tenantId;
  const id = body.id ?? randomUUID();
  const sealed = await deps.vault.sealToken(tenantId, id, body.data, {
    expiresAt: body.expires_at ? new Date(body.expires_at).toISOString() : null,
  });
  const createdAt = deps.clock.now();
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
    created_at: createdAt.toISOString(),
    ...(fields.parentId === undefined ? {} : { parent_id: fields.parentId }),
    ...(fields.deduplicated ? { deduplicated: true } : {}),
    ...(fields.claimTakenFrom ? { claim_taken_from: fields.claimTakenFrom } : {}),
    privacy: privacyOf(body.type, body.privacy),
    ...(body.mask === undefined ? {} : { mask: body.mask }),
    ...tokenSummariesOf(body.type, body.data),
    ...(holdsCvc(body.type, body.data)
      ? { cvc_expires_at: new Date(createdAt.getTime() + deps.cardCvcTtlSeconds * 1000).toISOString() }
      : {}),
    ...fields.search,
  };
  return { token, sealed };
}

/**
 * A unique search index's value is held by another token of the tenant. The holder is not named:
 * the caller may not be allowed to read it (docs/search.md).
 */
export const uniqueIndexTaken = () =>
  conflict(
    'Another token of this tenant holds the value of one of this token’s unique search indexes: delete that token first, or leave the index out.',
  );
