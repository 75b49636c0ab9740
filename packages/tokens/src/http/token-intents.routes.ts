import { defineRoute, type RouteDefinition } from '@tokenvault/platform';
import type { ReadModelConsistency } from '@tokenvault/cqrs';
import { createTokenIntentBody, tokenIntentParams, tokenIntentSchema } from '@tokenvault/contracts';
import type { TokenIntentCommands } from '../commands/token-intents.commands.ts';

/**
 * Token intents, as Basis Theory's: data collected (a public key may create them) and held sealed
 * for at most 24 hours until `POST /tokens { token_intent_id }` makes it a token; never shown.
 */
export function tokenIntentRoutes({
  consistency,
  commands,
}: {
  consistency: ReadModelConsistency;
  commands: Pick<TokenIntentCommands, 'create' | 'get' | 'delete'>;
}): RouteDefinition[] {
  const tag = 'Token intents';
  return [
    defineRoute({
      method: 'post',
      path: '/token-intents',
      operationId: 'createTokenIntent',
      summary:
        'Create a token intent: data checked as a token of its type, held sealed for at most 24 hours until POST /tokens with token_intent_id makes it a token',
      tag,
      permission: 'token-intent:create',
      // Its answer carries the token's summaries and fingerprint: kept without them.
      returnsSensitive: ['token-summary'],
      body: createTokenIntentBody,
      sealedBodyFields: ['data'],
      responses: {
        201: { description: 'Created; the response never echoes the data', schema: tokenIntentSchema },
      },
      async handle({ principal, body, requestId }) {
        const { intent, position } = await commands.create(principal, body, requestId);
        return { status: 201, headers: await consistency.afterWrite(position), body: intent };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/token-intents/:id',
      operationId: 'getTokenIntent',
      summary:
        'Get a token intent (never its data; a card’s first six and last four, no fingerprint, whoever reads); 404 once it was made a token, deleted or expired',
      tag,
      permission: 'token-intent:read',
      // Its answer carries the token's summaries and fingerprint: kept without them.
      returnsSensitive: ['token-summary'],
      params: tokenIntentParams,
      responses: { 200: { description: 'The token intent, without its data', schema: tokenIntentSchema } },
      async handle({ principal, params }) {
        return { status: 200, body: await commands.get(principal, params.id) };
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/token-intents/:id',
      operationId: 'deleteTokenIntent',
      summary: 'Delete a token intent, destroying the key of its data',
      tag,
      permission: 'token-intent:delete',
      returnsSensitive: [],
      params: tokenIntentParams,
      responses: { 204: { description: 'Deleted' } },
      async handle({ principal, params, requestId }) {
        const { position } = await commands.delete(principal, params.id, requestId);
        return { status: 204, headers: await consistency.afterWrite(position) };
      },
    }),
  ];
}
