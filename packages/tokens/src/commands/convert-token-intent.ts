import { aggregateStream, metadataOf } from '@tokenvault/cqrs';
import {
  MultiStreamAppendUnsupported,
  UniqueClaimTaken,
  WrongExpectedRevisionError,
  type Position,
} from '@tokenvault/eventstore';
import { conflict, serviceUnavailable, type Principal } from '@tokenvault/platform';
import {
  containerOfPrivacy,
  privacyOf,
  type CreateTokenBody,
  type CreateTokenRequestBody,
  type TokenResponse,
} from '@tokenvault/contracts';
import { revealsOnEvery } from '../domain/access.ts';
import { expressionsNeedReveal, tokenDecider } from '../domain/token.ts';
import {
  intentDataForToken,
  intentKeySubject,
  liveIntent,
  tokenIntentDecider,
} from '../domain/token-intent.ts';
import { tokenIntentStream, tokenStream } from '../domain/tokens.events.ts';
import { tokenSearchIndexScope } from '../domain/tokens.uniqueness.ts';
import { tokenKeysSideData } from '../projections/token-keys.projection.ts';
import { newIdOf, newTokenPlan, newTokenView, uniqueIndexTaken } from './create-token.ts';
import type { TokenCommandDeps } from './token-command-kit.ts';
import { tokenResponseOf } from './token-response.ts';

/** What POST /tokens takes beside `token_intent_id`: the token's fields but its type and data. */
export type TokenFromIntentFields = Omit<CreateTokenRequestBody, 'type' | 'data' | 'token_intent_id'>;

/** Whether a conversion's fields hold an expression to evaluate on the intent's data. */
const givesExpressions = (fields: TokenFromIntentFields): boolean =>
  fields.mask !== undefined ||
  (fields.search_indexes?.length ?? 0) > 0 ||
  fields.fingerprint_expression !== undefined ||
  (fields.id?.startsWith('{{') ?? false);

/** Rounds of reading the intent again when another writer got to its stream first. */
const maxAttempts = 3;

/**
 * Makes a token of a token intent (POST /tokens { token_intent_id }): the intent's type and data
 * with the request's other fields, checked as a create is (token:create on its containers, its
 * mask, its indexes); expressions on the intent's data (indexes, fingerprint, mask, an alias id)
 * need a key its rules reveal the token to (403 before the data is opened). The intent's TokenIntentConverted and the token's TokenCreated are one
 * commit, the intent's at the revision that was read: of two conversions at once one wins, the
 * other re-reads the intent and is refused (409), so an intent makes at most one token. Its key
 * is destroyed in that commit. A token made so is never deduplicated (it holds no claim on its
 * data): the intent was collected to become this token.
 */
export async function createTokenFromIntent(
  deps: TokenCommandDeps,
  principal: Principal,
  intentId: string,
  fields: TokenFromIntentFields,
  correlationId: string,
): Promise<{ token: TokenResponse; position: Position | null }> {
  const tenantId = principal.tenantId;
  const stream = tokenIntentStream(tenantId, intentId);
  for (let attempt = 1; ; attempt++) {
    const { state, events: history } = await aggregateStream(deps.store, stream, tokenIntentDecider);
    const now = deps.clock.now().toISOString();
    const convert = {
      type: 'ConvertTokenIntent' as const,
      tenantId,
      intentId,
      actorId: principal.actorId,
      now,
    };
    const intent = liveIntent(state, now);
    // Gone, expired, another tenant's or converted already: the decider says which (404 or 409).
    if (!intent) tokenIntentDecider.decide({ ...convert, tokenId: '' }, state);
    // Expressions evaluated on the intent's data (indexes, fingerprint, mask, an alias id) tell
    // of it through their errors and results: only a key the new token is revealed to sets them
    // (not a public key, which may not read what it collected), before the data is opened.
    if (givesExpressions(fields)) {
      const containers = fields.containers ?? [containerOfPrivacy(privacyOf(intent!.type, fields.privacy))];
      if (!revealsOnEvery(principal, containers)) throw expressionsNeedReveal();
    }
    const { deduplicate_token: _never, ...rest } = fields;
    // The CVC's time counts from the intent's creation, not from this conversion.
    const held = intentDataForToken(
      intent!,
      await deps.vault.decrypt(tenantId, intentKeySubject(intentId), intent!.data_ciphertext),
      deps.cardCvcTtlSeconds,
      now,
    );
    const body: CreateTokenBody = { ...rest, type: intent!.type, data: held.data as CreateTokenBody['data'] };
    const plan = await newTokenPlan(deps, principal, body);
    const { token: made, sealed } = await newTokenView(deps, principal, body, {
      // One draw of an alias: a taken one fails the conversion as a taken id does.
      id: newIdOf(body, 'body.id').draw(),
      containers: plan.containers,
      fingerprint: plan.fingerprint,
      parentId: undefined,
      search: plan.search,
    });
    const token =
      held.cvcExpiresAt && made.cvc_expires_at ? { ...made, cvc_expires_at: held.cvcExpiresAt } : made;
    const metadata = metadataOf(principal, correlationId);
    const recorded = (events: { type: string; data: object }[]) =>
      events.map((event) => ({ type: event.type, data: event.data, metadata }));
    try {
      const { position } = await deps.store.appendStreams(
        [
          {
            stream,
            events: recorded(tokenIntentDecider.decide({ ...convert, tokenId: token.id }, state)),
            expectedRevision: history.at(-1)!.revision,
          },
          {
            stream: tokenStream(tenantId, token.id),
            events: recorded(
              tokenDecider.decide({ type: 'CreateToken', token }, tokenDecider.initialState()),
            ),
            expectedRevision: 'no_stream',
          },
        ],
        { sideData: tokenKeysSideData([sealed]) },
      );
      if (sealed.newKey) deps.vault.keepTokenKey(sealed.newKey);
      deps.vault.forgetToken(tenantId, intentKeySubject(intentId));
      return { token: tokenResponseOf(token), position };
    } catch (error) {
      if (error instanceof WrongExpectedRevisionError) {
        if (error.stream !== stream) throw conflict('A token with this id exists.');
        if (attempt < maxAttempts) continue;
        throw conflict('The token intent was changed concurrently; retry the request.');
      }
      if (error instanceof UniqueClaimTaken && error.scope === tokenSearchIndexScope)
        throw uniqueIndexTaken();
      if (error instanceof MultiStreamAppendUnsupported) {
        throw serviceUnavailable(
          'Making a token of a token intent needs an event store that commits several streams at once (the embedded PostgreSQL one).',
        );
      }
      throw error;
    }
  }
}
