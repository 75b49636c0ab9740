import { randomUUID } from 'node:crypto';
import { metadataOf } from '@tokenvault/cqrs';
import { UniqueClaimTaken, type Position } from '@tokenvault/eventstore';
import { badRequest, conflict, forbidden, isDomainError, type Principal } from '@tokenvault/platform';
import { DataExpressionError, evaluateAliasExpression } from '@tokenvault/expressions';
import {
  containerOfPrivacy,
  privacyOf,
  tokenId,
  type CreateTokenBody,
  type TokenResponse,
} from '@tokenvault/contracts';
import { allowedOnAll, revealsEveryToken, revealsToken, type Grants } from '../domain/access.ts';
import type { TokenView } from '../domain/token.ts';
import { holdsCvc, tokenSummariesOf } from '../domain/token-details.ts';
import { assertMaskFits } from '../domain/token-mask.ts';
import type { SearchIndexSpec, TokenSearchFields } from '../domain/tokens.events.ts';
import { tokenIdOfHolder, tokenSearchIndexScope } from '../domain/tokens.uniqueness.ts';
import { tokenKeysSideData } from '../projections/token-keys.projection.ts';
import { readTargetOf, tokenFields } from '../queries/tokens.queries.ts';
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
  if (body.mask !== undefined) assertMaskFits(body.mask, body.data, body.type);
  const indexes = (body.search_indexes ?? []).map(searchIndexSpecOf);
  assertMayHoldUniqueIndexes(principal, indexes, `${where ?? 'body'}.search_indexes`);
  const { search, fingerprint } = await searchFieldsOf(
    deps.vault,
    principal.tenantId,
    body.type,
    body.data,
    indexes,
    body.fingerprint_expression,
  );
  const newId = newIdOf(body, `${where ?? 'body'}.id`);
  // A caller-chosen id asks for that token, not for any equal one; an alias asks for any id of
  // the data's format, which an equal token's id stands in for as a random one does. Answering an
  // equal token is a read of it that confirms its data: only a key whose token:read decision
  // reveals a token where this one goes deduplicates; for any other the create makes a new token
  // whatever the tenant holds, without a query that depends on the data (docs/search.md).
  const deduplicate =
    (body.id === undefined || newId.aliased) &&
    (body.deduplicate_token ?? principal.tenantSettings.deduplicate_tokens === 'true') &&
    revealsToken(principal, { containers, privacy: privacyOf(body.type, body.privacy) });
  return { containers, fingerprint, search, deduplicate, newId };
}

/** How a new token's id is drawn: `draw()` gives the id of one attempt at the append. */
export interface NewTokenId {
  draw: () => string;
  /** Drawn by an alias expression: a draw a token of the tenant already holds is drawn again. */
  aliased: boolean;
}

/** Draws of an alias id before a create gives up (each one a token of the tenant already held). */
export const aliasIdDraws = 5;

/**
 * The caller's id, an alias of the data drawn at each attempt, or a random UUID. An alias
 * expression that is not one, or whose alias cannot be a token id (a format keeping characters an
 * id cannot hold, or more than 200 of them), is a 400 naming `field`: what an alias keeps of the
 * data does not depend on the draw, so the first draw tells.
 */
export function newIdOf(body: CreateTokenBody, field: string): NewTokenId {
  const { id, data } = body;
  if (id === undefined) return { draw: randomUUID, aliased: false };
  if (!id.startsWith('{{')) return { draw: () => id, aliased: false };
  const draw = () => evaluateAliasExpression(id, data);
  let first: string;
  try {
    first = draw();
  } catch (error) {
    if (!(error instanceof DataExpressionError)) throw error;
    throw badRequest('The id’s alias expression could not be evaluated.', { [field]: [error.message] });
  }
  if (!tokenId.safeParse(first).success) {
    throw badRequest('The id’s alias expression gives no token id for this data.', {
      [field]: [
        'The alias keeps characters a token id cannot hold (letters, digits and . _ : ~ - only, starting with a letter or digit, at most 200): alias_preserve_format keeps every character but letters and digits; alias_preserve_length draws letters and digits only',
      ],
    });
  }
  return { draw, aliased: true };
}

/** Every alias drawn for a new token was an id a token of the tenant holds. */
export const aliasIdsTaken = (where?: string) =>
  conflict(
    `Each of ${aliasIdDraws} alias ids drawn for the token${where ? ` requested at ${where}` : ''} is held by a token of this tenant: this data's format leaves too few aliases. Use an alias of more characters, or no id (a random one).`,
  );

/** With a parent, the token and its association to the parent are one event. */
export async function createToken(
  deps: TokenCommandDeps,
  principal: Principal,
  body: CreateTokenBody,
  correlationId: string,
  parentId?: string,
): Promise<CreateTokenResult> {
  const { containers, fingerprint, search, deduplicate, newId } = await newTokenPlan(deps, principal, body);
  const tenantId = principal.tenantId;
  const fields = { containers, fingerprint, parentId, search, newId };
  if (!deduplicate) return appendNewToken(deps, principal, body, correlationId, fields);
  // Only a token in the same containers, and one this key may read, stands in for a new one. The
  // read model finds one made before (with or without deduplication); the claim the new token
  // takes in its own append finds one made at the same moment, however far behind the read model.
  const existing = await deps.queries.findByFingerprint(tenantId, body.type, fingerprint, containers);
  if (existing && revealsToken(principal, readTargetOf(existing))) {
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
      if (holder && revealsToken(principal, readTargetOf({ ...holder, privacy: holder.privacy ?? null }))) {
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

/** What a create decided besides the body: its id, where it goes, its fingerprint and indexes. */
export interface NewTokenFields {
  id: string;
  containers: string[];
  fingerprint: string;
  parentId: string | undefined;
  search: TokenSearchFields;
  deduplicated?: true;
  /** An expired token whose claim on the data this one takes over. */
  claimTakenFrom?: string | undefined;
}

/** The append of a new token, with its alias drawn again while a token of the tenant holds it. */
async function appendNewToken(
  deps: TokenCommandDeps,
  principal: Principal,
  body: CreateTokenBody,
  correlationId: string,
  { newId, ...fields }: Omit<NewTokenFields, 'id'> & { newId: NewTokenId },
): Promise<CreateTokenResult> {
  for (let draw = 1; ; draw++) {
    try {
      return await appendTokenView(deps, principal, body, correlationId, { ...fields, id: newId.draw() });
    } catch (error) {
      if (!newId.aliased || !isDomainError(error, 'already-exists')) throw error;
      if (draw >= aliasIdDraws) throw aliasIdsTaken();
    }
  }
}

async function appendTokenView(
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
  const id = fields.id;
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
 * A unique index's claim spans the tenant (every type and container): its 409 tells whether any
 * token holds the value, one the caller may never read included. So only a caller whose token:read
 * decision reveals every token of the tenant may give one (a public key never does); for any other
 * key the create (or update) is a 403 whatever the data, before anything is evaluated.
 */
export function assertMayHoldUniqueIndexes(
  grants: Grants,
  indexes: readonly Pick<SearchIndexSpec, 'unique'>[],
  field: string,
): void {
  const at = indexes.findIndex((index) => index.unique);
  if (at < 0 || revealsEveryToken(grants)) return;
  throw forbidden(
    'A unique search index tells whether any token of the tenant holds its value: only a key that reveals every token (token:read on every container, no rule masking or redacting) may give one.',
    {
      errors: {
        [`${field}.${at}`]: [
          'Give this index without "unique", or make the call with a key whose token:read reveals every container',
        ],
      },
    },
  );
}

/**
 * A unique search index's value is held by another token of the tenant. The holder is not named:
 * the caller may not be allowed to read it (docs/search.md).
 */
export const uniqueIndexTaken = () =>
  conflict(
    'Another token of this tenant holds the value of one of this token’s unique search indexes: delete that token first, or leave the index out.',
  );
