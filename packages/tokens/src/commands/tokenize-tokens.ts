import { metadataOf } from '@tokenvault/cqrs';
import {
  MultiStreamAppendUnsupported,
  UniqueClaimTaken,
  WrongExpectedRevisionError,
  type Position,
} from '@tokenvault/eventstore';
import { badRequest, conflict, serviceUnavailable, type Principal } from '@tokenvault/platform';
import type { CreateTokenBody, TokenResponse } from '@tokenvault/contracts';
import { revealsToken } from '../domain/access.ts';
import { tokenDecider } from '../domain/token.ts';
import { tokenStream } from '../domain/tokens.events.ts';
import { tokenDataKey, tokenSearchIndexScope } from '../domain/tokens.uniqueness.ts';
import { tokenKeysSideData } from '../projections/token-keys.projection.ts';
import { readTargetOf, tokenFields } from '../queries/tokens.queries.ts';
import {
  aliasIdDraws,
  aliasIdsTaken,
  newTokenPlan,
  newTokenView,
  uniqueIndexTaken,
  type NewTokenId,
} from './create-token.ts';
import type { TokenCommandDeps } from './token-command-kit.ts';
import { tokenResponseOf } from './token-response.ts';

/** One token request of a bulk call and where it is in the body (`body.cards.0`). */
export interface TokenRequestAt {
  where: string;
  body: CreateTokenBody;
}

export interface TokenizeResult {
  /** Each request's token, in the requests' order: a new one, or an equal one deduplication found. */
  tokens: TokenResponse[];
  /** The append's; null when every request was answered by an existing token. */
  position: Position | null;
}

/**
 * Many tokens in one append (POST /tokenize): every request is checked as a create is (token:create
 * on its containers, its mask, its indexes) before anything is sealed, and the new tokens are one
 * commit of their streams, their claims and their keys, so a failure or a crash leaves none of them.
 * Deduplication works as on a create (only for a key that reveals where the token goes), within
 * the call too (equal data answers the first's token);
 * a concurrent create of the same data refuses the whole call with a 409 to retry.
 */
export async function tokenizeTokens(
  deps: TokenCommandDeps,
  principal: Principal,
  requests: readonly TokenRequestAt[],
  correlationId: string,
): Promise<TokenizeResult> {
  const tenantId = principal.tenantId;
  const idsSeen = new Map<string, string>();
  for (const { where, body } of requests) {
    if (body.id === undefined || body.id.startsWith('{{')) continue;
    const first = idsSeen.get(body.id);
    if (first) {
      throw badRequest('Two token requests of this call ask for one id.', {
        [`${where}.id`]: [`The token request at ${first} asks for this id too`],
      });
    }
    idsSeen.set(body.id, where);
  }
  const plans = await Promise.all(
    requests.map(({ where, body }) => newTokenPlan(deps, principal, body, where)),
  );
  // Each request: an existing token (index into `existing`), an earlier request of the call, or new.
  const answers: ({ existing: TokenResponse } | { sameAs: number } | { create: true })[] = [];
  const byDataKey = new Map<string, number>();
  for (const [index, { body }] of requests.entries()) {
    const plan = plans[index]!;
    if (!plan.deduplicate) {
      answers.push({ create: true });
      continue;
    }
    const key = tokenDataKey({ tenant_id: tenantId, type: body.type, ...plan });
    const earlier = byDataKey.get(key);
    if (earlier !== undefined) {
      answers.push({ sameAs: earlier });
      continue;
    }
    byDataKey.set(key, index);
    const found = await deps.queries.findByFingerprint(
      tenantId,
      body.type,
      plan.fingerprint,
      plan.containers,
    );
    answers.push(
      found && revealsToken(principal, readTargetOf(found))
        ? { existing: tokenFields(found) }
        : { create: true },
    );
  }
  const viewOf = (index: number, id: string) => {
    const plan = plans[index]!;
    return newTokenView(deps, principal, requests[index]!.body, {
      id,
      containers: plan.containers,
      fingerprint: plan.fingerprint,
      parentId: undefined,
      search: plan.search,
      ...(plan.deduplicate ? { deduplicated: true as const } : {}),
    });
  };
  const ids = newIdsOf(
    requests,
    plans.map((plan, index) => ('create' in answers[index]! ? plan.newId : undefined)),
  );
  const created = await Promise.all(
    ids.map(async (id, index) => (id === undefined ? undefined : viewOf(index, id))),
  );
  let position: Position | null = null;
  if (created.some((one) => one !== undefined)) {
    const metadata = metadataOf(principal, correlationId);
    // An alias a token of the tenant already holds is drawn again, and the whole call appended again.
    for (let draw = 1; ; draw++) {
      const fresh = created.flatMap((one) => (one ? [one] : []));
      const appends = fresh.map(({ token }) => ({
        stream: tokenStream(tenantId, token.id),
        events: tokenDecider
          .decide({ type: 'CreateToken', token }, tokenDecider.initialState())
          .map((event) => ({ type: event.type, data: event.data, metadata })),
        expectedRevision: 'no_stream' as const,
      }));
      try {
        ({ position } = await deps.store.appendStreams(appends, {
          sideData: tokenKeysSideData(fresh.map(({ sealed }) => sealed)),
        }));
        for (const { sealed } of fresh) if (sealed.newKey) deps.vault.keepTokenKey(sealed.newKey);
        break;
      } catch (error) {
        const taken =
          error instanceof WrongExpectedRevisionError
            ? created.findIndex(
                (one, index) =>
                  plans[index]!.newId.aliased && one && tokenStream(tenantId, one.token.id) === error.stream,
              )
            : -1;
        if (taken === -1) throw bulkAppendProblem(error, requests, tenantId) ?? error;
        if (draw >= aliasIdDraws) throw aliasIdsTaken(requests[taken]!.where);
        const others = new Set(ids.flatMap((id, index) => (id === undefined || index === taken ? [] : [id])));
        const redrawn = drawDistinct(plans[taken]!.newId, others, requests[taken]!.where);
        ids[taken] = redrawn;
        created[taken] = await viewOf(taken, redrawn);
      }
    }
  }
  const tokens: TokenResponse[] = [];
  for (const [index, answer] of answers.entries()) {
    if ('existing' in answer) tokens.push(answer.existing);
    else if ('sameAs' in answer) tokens.push(tokens[answer.sameAs]!);
    else tokens.push(tokenResponseOf(created[index]!.token));
  }
  return { tokens, position };
}

/** The refusals of the bulk append as the caller can act on them; undefined for any other error. */
function bulkAppendProblem(error: unknown, requests: readonly TokenRequestAt[], tenantId: string) {
  if (error instanceof WrongExpectedRevisionError) {
    const where = requests.find(
      ({ body }) => body.id !== undefined && tokenStream(tenantId, body.id) === error.stream,
    )?.where;
    return conflict(
      `A token with the id asked for ${where ? `at ${where} ` : ''}exists; nothing of this call was stored.`,
    );
  }
  if (error instanceof MultiStreamAppendUnsupported) {
    // KurrentDB or an external event store (EVENTSTORE_URL): no commit of several streams yet.
    return serviceUnavailable(
      'POST /tokenize needs an event store that commits several streams at once (the embedded PostgreSQL one); create the tokens one by one with POST /tokens.',
    );
  }
  if (error instanceof UniqueClaimTaken) {
    if (error.scope === tokenSearchIndexScope) return uniqueIndexTaken();
    return conflict(
      'A token with the same data as one of this call was created at the same moment; nothing of this call was stored: retry it.',
    );
  }
  return undefined;
}

/**
 * The id of each request to create (undefined for one an existing token answers), distinct within
 * the call: an alias that another request's id already is gets drawn again.
 */
function newIdsOf(
  requests: readonly TokenRequestAt[],
  newIds: readonly (NewTokenId | undefined)[],
): (string | undefined)[] {
  // The caller's own ids first (distinct: checked above), then the aliases around them.
  const taken = new Set(newIds.flatMap((newId) => (newId && !newId.aliased ? [newId.draw()] : [])));
  return newIds.map((newId, index) => {
    if (!newId) return undefined;
    if (!newId.aliased) return newId.draw();
    const id = drawDistinct(newId, taken, requests[index]!.where);
    taken.add(id);
    return id;
  });
}

/** An alias none of `taken` is, within the draws a create makes. */
function drawDistinct(newId: NewTokenId, taken: ReadonlySet<string>, where: string): string {
  for (let draw = 1; draw <= aliasIdDraws; draw++) {
    const id = newId.draw();
    if (!taken.has(id)) return id;
  }
  throw aliasIdsTaken(where);
}
