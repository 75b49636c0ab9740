import { aggregateStream, defaultCommandAttempts } from '@tokenvault/cqrs';
import { UniqueClaimTaken, type Position } from '@tokenvault/eventstore';
import { badRequest, conflict, notFound, type FieldErrors, type Principal } from '@tokenvault/platform';
import { privacyOf, tokenDataIssues, type TokenResponse, type UpdateTokenBody } from '@tokenvault/contracts';
import { canonicalJson, type SealedToken } from '@tokenvault/vault';
import { revealsOnEvery, revealsToken } from '../domain/access.ts';
import { mergePatch } from '../domain/merge-patch.ts';
import { assertMaskFits } from '../domain/token-mask.ts';
import { StaleDataBasis, tokenDecider, type TokenPatch, type TokenView } from '../domain/token.ts';
import { holdsCvc, tokenSummariesOf } from '../domain/token-details.ts';
import { tokenStream, type TokenUpdate } from '../domain/tokens.events.ts';
import { tokenIdOfHolder, tokenSearchIndexScope } from '../domain/tokens.uniqueness.ts';
import { assertMayHoldUniqueIndexes, uniqueIndexTaken } from './create-token.ts';
import { searchFieldsOf, searchIndexSpecOf } from './search-fields.ts';
import { tokenKeysSideData } from '../projections/token-keys.projection.ts';
import { readTargetOf } from '../queries/tokens.queries.ts';
import { liveToken, tokenCommandContext, type TokenCommandDeps } from './token-command-kit.ts';
import { tokenResponseOf } from './token-response.ts';

/**
 * A merge patch of a live token (docs/decisions.md, Tokens). The data is merged here, where it
 * can be opened, then checked by the token's type, sealed and fingerprinted (a key the token is
 * not revealed to replaces the data whole instead: dataAfterPatch); the decider merges
 * the rest and checks the permissions. Everything that can refuse the update runs before
 * anything is appended. With the tenant deduplicating, an update that would make the token equal
 * to another one this key may read is a 409 naming it.
 */
export async function updateToken(
  deps: TokenCommandDeps,
  principal: Principal,
  tokenId: string,
  body: UpdateTokenBody,
  correlationId: string,
): Promise<{ token: TokenResponse; position: Position | null }> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await updateOnce(deps, principal, tokenId, body, correlationId);
    } catch (error) {
      // Another update changed the data this patch was merged into: merge into the new data.
      if (!(error instanceof StaleDataBasis) || attempt >= defaultCommandAttempts) throw error;
    }
  }
}

async function updateOnce(
  deps: TokenCommandDeps,
  principal: Principal,
  tokenId: string,
  body: UpdateTokenBody,
  correlationId: string,
): Promise<{ token: TokenResponse; position: Position | null }> {
  const tenantId = principal.tenantId;
  const stream = tokenStream(tenantId, tokenId);
  const { state } = await aggregateStream(deps.store, stream, tokenDecider);
  if (state.status !== 'live') throw notFound('No token with this id.');
  const current = state.token;
  const patch: TokenPatch = {
    ...(body.metadata === undefined ? {} : { metadata: body.metadata }),
    ...(body.containers === undefined ? {} : { containers: body.containers }),
    ...(body.expires_at === undefined ? {} : { expires_at: body.expires_at }),
    ...(body.privacy === undefined ? {} : { privacy: body.privacy }),
  };
  const { acting, metadata } = tokenCommandContext(principal, correlationId, deps.clock);
  const commandOf = (prepared: TokenPatch) => ({
    type: 'UpdateToken' as const,
    tokenId,
    patch: prepared,
    ...acting,
  });
  let sealed: SealedToken | undefined;
  let mergedData: unknown;
  // Permissions (and the rest of the patch) first: a key that may not update the token learns
  // nothing from checks of the data it would lead to. New expressions on the data go with them:
  // only a key its rules reveal the token to may set them (the decider's 403), before any runs.
  tokenDecider.decide(commandOf({ ...patch, ...expressionsGivenBy(body, current) }), state);
  // Unique indexes are claimed again when they change or the data does: a 409 then tells whether
  // another token holds the value, which only a key revealing them all may learn. Decided on the
  // token's stream (its indexes as of now), before the data is opened.
  if (body.search_indexes !== undefined || body.data !== undefined) {
    const indexes =
      body.search_indexes === undefined
        ? (current.search_indexes ?? [])
        : (body.search_indexes ?? []).map(searchIndexSpecOf);
    assertMayHoldUniqueIndexes(principal, indexes, 'body.search_indexes');
  }
  // A key that may update but not read the token (an update-only or a masked key) learns nothing
  // of the data from the stored expressions a data patch evaluates again: their failures are not
  // told (docs/security.md, "One rule for expressions on stored data").
  const reveals = revealsOnEvery(principal, [...current.containers, ...(body.containers ?? [])]);
  // New data, indexes or fingerprint expression: the data after the update is opened here to
  // evaluate them (the indexes' values and the fingerprint follow the data).
  if (
    body.data !== undefined ||
    body.search_indexes !== undefined ||
    body.fingerprint_expression !== undefined
  ) {
    // A key the token is not revealed to replaces its data whole and never opens the stored data:
    // whatever it merged into, compared with or kept from data it cannot see would show in the
    // answer (a validation error, an unchanged token, the CVC's time): docs/security.md, "Data
    // patches by keys that may not reveal". Without `data` (the token's own indexes given again,
    // which the decider let through) the stored data is kept, its expressions evaluated untold.
    const replaces = body.data !== undefined && !reveals;
    const currentData = replaces
      ? undefined
      : await deps.vault.decrypt(tenantId, tokenId, current.data_ciphertext);
    const merged = dataAfterPatch(body.data, currentData, reveals);
    mergedData = merged;
    const issues = body.data === undefined ? [] : tokenDataIssues(current.type, merged, deps.clock.now());
    if (issues.length) throw invalidPatchedData(current.type, issues, reveals);
    const { search, fingerprint } = await searchFieldsOf(
      deps.vault,
      tenantId,
      current.type,
      merged,
      body.search_indexes === undefined
        ? (current.search_indexes ?? [])
        : (body.search_indexes ?? []).map(searchIndexSpecOf),
      body.fingerprint_expression === undefined
        ? current.fingerprint_expression
        : (body.fingerprint_expression ?? undefined),
      reveals ? 'tell' : 'untold',
    );
    // A replacement is always new data (resealed, a new version), equal or not.
    const changed = replaces || canonicalJson(merged) !== canonicalJson(currentData);
    if (changed) {
      sealed = await deps.vault.sealToken(tenantId, tokenId, merged, {
        reuseKeyOf: current.data_ciphertext,
      });
    }
    const cvcExpiresAt = cvcExpiryAfterUpdate(deps, current, replaces ? undefined : { currentData }, merged);
    patch.data = {
      basis: current.data_ciphertext,
      changed,
      data_ciphertext: sealed ? sealed.ciphertext : current.data_ciphertext,
      fingerprint,
      ...tokenSummariesOf(current.type, merged),
      ...(cvcExpiresAt ? { cvc_expires_at: cvcExpiresAt } : {}),
    };
    patch.search = search;
  }
  // The token's own mask (new, or kept over new data) must fit the data the update leads to;
  // `mask: null` returns it to its type's default (which fits any data of the type). A kept mask
  // is checked for a key the token is revealed to only: for any other, whether it fits would tell
  // of the data, and a mask that does not fit shows no data on a masked read anyway.
  if (body.mask === null) patch.mask = null;
  const givenMask = body.mask === null ? undefined : (body.mask ?? current.mask);
  if (givenMask !== undefined && (body.mask !== undefined || (patch.data?.changed && reveals))) {
    assertMaskFits(
      givenMask,
      mergedData ?? (await deps.vault.decrypt(tenantId, tokenId, current.data_ciphertext)),
      current.type,
    );
    if (body.mask !== undefined) patch.mask = body.mask;
  }
  // A new token key made for this update (a token sealed before token keys) goes with the append.
  const sideData = tokenKeysSideData([sealed]);
  const command = commandOf(patch);
  const planned = tokenDecider.decide(command, state);
  if (planned.length === 0) return { token: tokenResponseOf(current), position: null };
  const execute = async (deduplicate: boolean) => {
    const outcome = await deps
      .handle({ ...command, deduplicate }, metadata, { sideData })
      .catch((error: unknown) => {
        if (error instanceof UniqueClaimTaken && error.scope === tokenSearchIndexScope)
          throw uniqueIndexTaken();
        throw error;
      });
    const after = outcome.state.status === 'live' ? outcome.state.token : current;
    return { token: tokenResponseOf(after), position: outcome.position };
  };
  const update = planned[0]!.data as TokenUpdate;
  // The call's deduplicate_token overrides the tenant's setting, as on a create.
  const deduplicate = body.deduplicate_token ?? principal.tenantSettings.deduplicate_tokens === 'true';
  // Refusing (naming the equal token) confirms a guess of its data: only a key that reveals a
  // token where this one goes deduplicates; any other updates whatever the tenant holds (issue 48, 5).
  const target = {
    containers: update.containers,
    privacy: privacyOf(current.type, update.privacy ?? current.privacy),
  };
  if (!deduplicate || !update.data_claim || !revealsToken(principal, target)) return await execute(false);
  // Only a token this key may read is named (and refuses the update): for any other, a 409
  // would tell a key what data a token it cannot read holds. Those updates go through, as a
  // create by such a key makes a new token (without the claim on the data).
  const refuse = (holderId: string) =>
    conflict(
      `Token ${holderId} already holds this data in these containers, and the tenant deduplicates tokens: use that token, or delete one of them first.`,
    );
  const existing = await deps.queries.findByFingerprint(
    tenantId,
    current.type,
    update.fingerprint,
    update.containers,
    tokenId,
  );
  if (existing && revealsToken(principal, readTargetOf(existing))) throw refuse(existing.id);
  try {
    return await execute(true);
  } catch (error) {
    if (!(error instanceof UniqueClaimTaken)) throw error;
    const holderId = tokenIdOfHolder(error.holder);
    const holder = await liveToken(deps, tenantId, holderId);
    if (holder && revealsToken(principal, readTargetOf({ ...holder, privacy: holder.privacy ?? null })))
      throw refuse(holderId);
    return await execute(false);
  }
}

/**
 * What a patch gives of the token's expressions, as the decider compares them with the token's
 * (setsExpressions): the mask, and the search and fingerprint expressions without their values.
 */
function expressionsGivenBy(body: UpdateTokenBody, current: TokenView): Pick<TokenPatch, 'mask' | 'search'> {
  const givesSearch = body.search_indexes !== undefined || body.fingerprint_expression !== undefined;
  if (body.mask === undefined && !givesSearch) return {};
  const indexes =
    body.search_indexes === undefined
      ? current.search_indexes
      : (body.search_indexes ?? []).map(searchIndexSpecOf);
  const fingerprintExpression =
    body.fingerprint_expression === undefined ? current.fingerprint_expression : body.fingerprint_expression;
  return {
    ...(body.mask === undefined ? {} : { mask: body.mask }),
    ...(givesSearch
      ? {
          search: {
            ...(indexes?.length ? { search_indexes: indexes } : {}),
            ...(fingerprintExpression ? { fingerprint_expression: fingerprintExpression } : {}),
          },
        }
      : {}),
  };
}

/**
 * The token's data after a patch: `data` merged into the stored data (RFC 7396) for a key the
 * token is revealed to; for any other, `data` merged into nothing, i.e. the whole new data (its
 * `null` members dropped), so that nothing of the stored data decides what is checked or kept.
 */
export function dataAfterPatch(patchData: unknown, currentData: unknown, reveals: boolean): unknown {
  if (patchData === undefined) return currentData;
  return mergePatch(reveals ? currentData : undefined, patchData);
}

/**
 * The 400 for patched data that is not valid data of the token's type. For a key the token is
 * not revealed to, the data was its own patch alone (dataAfterPatch): the answer says so, and how
 * to merge a partial patch instead.
 */
export function invalidPatchedData(
  type: string,
  issues: readonly { path?: readonly PropertyKey[]; message?: string }[],
  reveals: boolean,
) {
  const errors: FieldErrors = {};
  for (const issue of issues) {
    (errors[['body', ...(issue.path ?? []).map(String)].join('.')] ??= []).push(issue.message ?? 'Invalid');
  }
  if (reveals)
    return badRequest(`The data the patch leads to is not valid ${type} data; see errors.`, errors);
  (errors['body.data'] ??= []).unshift(
    `This API key's token:read does not reveal the token, so body.data replaces its data whole and must be complete ${type} data; to merge a partial patch into the stored data, use a key whose token:read reveals the token on each of its containers`,
  );
  return badRequest(
    `body.data is not complete ${type} data: a key the token is not revealed to replaces the data whole (it cannot merge into data it may not see); see errors.`,
    errors,
  );
}

/**
 * When the CVC of the updated data goes: a new CVC (another value, or one where none was left)
 * gets CARD_CVC_TTL_SECONDS of its own; the same CVC keeps its time (one given before removals
 * existed gets it from this update); no CVC, no time. Without the stored data (a key the token is
 * not revealed to: whether the CVC is the same would be an answer to a guess of it) the time is
 * always counted anew.
 */
export function cvcExpiryAfterUpdate(
  deps: Pick<TokenCommandDeps, 'clock' | 'cardCvcTtlSeconds'>,
  current: Pick<TokenView, 'type' | 'cvc_expires_at'>,
  before: { currentData: unknown } | undefined,
  merged: unknown,
): string | undefined {
  if (!holdsCvc(current.type, merged)) return undefined;
  const cvcOf = (data: unknown) => (data as { cvc?: unknown }).cvc;
  const sameCvc =
    before !== undefined &&
    holdsCvc(current.type, before.currentData) &&
    cvcOf(before.currentData) === cvcOf(merged);
  if (sameCvc && current.cvc_expires_at) return current.cvc_expires_at;
  return new Date(deps.clock.now().getTime() + deps.cardCvcTtlSeconds * 1000).toISOString();
}
