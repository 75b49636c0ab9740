import { badRequest, defineRoute, type FieldErrors, type RouteDefinition } from '@tokenvault/platform';
import {
  createTokenBody,
  detokenizeBody,
  detokenizeResponseSchema,
  tokenizeBody,
  tokenizeResponseSchema,
} from '@tokenvault/contracts';
import { fieldUnder, findTokenIds, renderJson, stringsIn } from '@tokenvault/expressions';
import type { Detokenizer } from '../commands/detokenize.ts';
import type { TokenCommands } from '../commands/tokens.commands.ts';
import type { TokenRequestAt } from '../commands/tokenize-tokens.ts';
import {
  bodyPath,
  maxTokenRequestsPerCall,
  tokenRequestsIn,
  withTokenRequestsAnswered,
} from '../domain/token-requests.ts';
import type { TokenRouteDeps } from './token-access.ts';

export interface BulkRouteDeps {
  consistency: TokenRouteDeps['consistency'];
  commands: Pick<TokenCommands, 'tokenize'>;
  detokenizer: Pick<Detokenizer, 'openTokens'>;
}

/** The token requests of a tokenize body, each checked as POST /tokens checks its body. */
function tokenRequestsOf(body: unknown): TokenRequestAt[] {
  const found = tokenRequestsIn(body);
  if (found.length === 0) {
    throw badRequest('The body holds no token request.', {
      body: ['Put at least one object with `type` and `data` (a token request) in the body'],
    });
  }
  if (found.length > maxTokenRequestsPerCall) {
    throw badRequest('Too many token requests in one call.', {
      body: [
        `At most ${maxTokenRequestsPerCall} token requests per call (found ${found.length}); split the body`,
      ],
    });
  }
  const errors: FieldErrors = {};
  const requests: TokenRequestAt[] = [];
  for (const { path, request } of found) {
    const where = bodyPath(path);
    const parsed = createTokenBody.safeParse(request);
    if (parsed.success) {
      requests.push({ where, body: parsed.data });
      continue;
    }
    for (const issue of parsed.error.issues) {
      const field = [where, ...issue.path.map(String)].join('.');
      (errors[field] ??= []).push(issue.message);
    }
  }
  if (Object.keys(errors).length > 0) {
    throw badRequest('Some token requests of the body are not valid; see errors.', errors);
  }
  return requests;
}

/** Bulk: many tokens created in one append (POST /tokenize), many detokenized in one read (POST /detokenize). */
export function bulkTokenRoutes({ consistency, commands, detokenizer }: BulkRouteDeps): RouteDefinition[] {
  const tag = 'Tokens';
  return [
    defineRoute({
      method: 'post',
      path: '/tokenize',
      operationId: 'tokenizeData',
      summary:
        'Create up to 100 tokens from the token requests nested anywhere in the body, all in one append or none; answered in the body’s shape',
      tag,
      permission: 'token:create',
      // Its answer carries the token's summaries and fingerprint: kept without them.
      returnsSensitive: ['token-summary'],
      body: tokenizeBody,
      responses: {
        200: {
          description: 'The body with each token request replaced by its token',
          schema: tokenizeResponseSchema,
        },
      },
      async handle({ principal, body, requestId }) {
        const requests = tokenRequestsOf(body);
        const { tokens, position } = await commands.tokenize(principal, requests, requestId);
        const headers =
          position === null ? await consistency.afterLatestWrites() : await consistency.afterWrite(position);
        return { status: 200, headers, body: withTokenRequestsAnswered(body, tokens) as typeof body };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/detokenize',
      operationId: 'detokenizeData',
      summary:
        'Render the `{{ <token id> }}` expressions of a JSON body (up to 100 tokens) with the tokens’ data as the key’s rules show it; one read naming every token',
      tag,
      permission: 'token:use',
      body: detokenizeBody,
      // Its answer is token data: an Idempotency-Key never keeps it.
      returnsSensitive: ['token-data'],
      responses: {
        200: { description: 'The body with every expression rendered', schema: detokenizeResponseSchema },
      },
      async handle({ principal, body, requestId }) {
        const ids = findTokenIds(stringsIn(body), 'body');
        const opened = await detokenizer.openTokens(principal, ids, 'token:use', requestId, 'body');
        return { status: 200, body: renderJson(body, opened, fieldUnder('body')) as typeof body };
      },
    }),
  ];
}
