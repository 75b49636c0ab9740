import { metadataOf } from '@tokenvault/cqrs';
import {
  MultiStreamAppendUnsupported,
  UniqueClaimTaken,
  WrongExpectedRevisionError,
  type Position,
} from '@tokenvault/eventstore';
import { badRequest, conflict, serviceUnavailable, type Principal } from '@tokenvault/platform';
import type { CreateTokenBody, TokenResponse } from '@tokenvault/contracts';
import { allowedOnAny } from '../domain/access.ts';
import { tokenDecider } from '../domain/token.ts';
import { tokenStream } from '../domain/tokens.events.ts';
import { tokenDataKey, tokenSearchIndexScope } from '../domain/tokens.uniqueness.ts';
import { tokenKeysSideData } from '../projections/token-keys.projection.ts';
import { tokenFields } from '../queries/tokens.queries.ts';
import { newTokenPlan, newTokenView, uniqueIndexTaken } from './create-token.ts';
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
 * Deduplication works as on a create, within the call too (equal data answers the first's token);
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
    if (body.id === undefined) continue;
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
      found && allowedOnAny(principal, 'token:read', found.containers)
        ? { existing: tokenFields(found) }
        : { create: true },
    );
  }
  const created = await Promise.all(
    requests.map(async ({ body }, index) => {
      if (!('create' in answers[index]!)) return undefined;
      const plan = plans[index]!;
      return newTokenView(deps, principal, body, {
        containers: plan.containers,
        fingerprint: plan.fingerprint,
        parentId: undefined,
        search: plan.search,
        ...(plan.deduplicate ? { deduplicated: true as const } : {}),
      });
    }),
  );
  const fresh = created.flatMap((one) => (one ? [one] : []));
  let position: Position | null = null;
  if (fresh.length > 0) {
    const metadata = metadataOf(principal, correlationId);
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
    } catch (error) {
      throw bulkAppendProblem(error, requests, tenantId) ?? error;
    }
    for (const { sealed } of fresh) if (sealed.newKey) deps.vault.keepTokenKey(sealed.newKey);
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
