import {
  badRequest,
  decodeCursor,
  defineRoute,
  encodeCursor,
  type Principal,
  type RouteDefinition,
} from '@tokenvault/platform';
import {
  cursorPageSchema,
  searchTokensBody,
  searchTokensV2Body,
  tokenCursorPageV2Schema,
  tokenId,
  tokenSchema,
  tokenTypes,
} from '@tokenvault/contracts';
import { revealableContainers, revealsToken } from '../domain/access.ts';
import { summariesShown } from '../domain/token-details.ts';
import { readTargetOf, tokenFields, type TokenListFilter } from '../queries/tokens.queries.ts';
import { parseSearchQuery } from './search-query.ts';
import type { TokenAccess, TokenRouteDeps } from './token-access.ts';

/** The containers under which the key may search, from its rules; null when it may search them all. */
const searchableUnder = (principal: Principal) =>
  principal.permissions.has('token:search')
    ? null
    : principal.rules
        .filter((rule) => rule.permissions.includes('token:search'))
        .map((rule) => rule.container);

const isTokenId = (key: unknown): key is string => typeof key === 'string' && tokenId.safeParse(key).success;

const repeated = (field: string) =>
  badRequest('The search query is not valid; see errors.', {
    'body.query': [`Give ${field} once (a token has one)`],
  });

/**
 * Token search (docs/search.md): POST /v2/tokens/search by cursor, POST /tokens/search by page.
 * `data:<value>` is the value's blind index under the tenant's search key, matched against the
 * stored ones: no plaintext is compared or scanned; it and `fingerprint:` match only tokens the
 * key's token:read decision reveals. A result is shown as that decision says (withData: its data,
 * its mask or nothing, on record as a read with the transform); a result the key may not read is
 * listed without data or summaries and is no read.
 */
export function tokenSearchRoutes(
  { vault }: Pick<TokenRouteDeps, 'vault'>,
  { queries, withData }: Pick<TokenAccess, 'queries' | 'withData'>,
): RouteDefinition[] {
  const search = async (
    principal: Principal,
    request: { query: string; size: number; start?: string | undefined; page?: number },
    requestId: string,
  ) => {
    const filter = {
      types: [] as string[],
      containers: [] as string[],
      metadata: {} as Record<string, string>,
      indexValues: [] as string[],
      fingerprints: [] as string[],
      created: {} as { from?: string; to?: string },
    };
    for (const term of parseSearchQuery(request.query)) {
      switch (term.field) {
        case 'data':
          filter.indexValues.push(await vault.searchIndex(principal.tenantId, term.value));
          break;
        case 'metadata':
          if (filter.metadata[term.key] !== undefined) throw repeated(`metadata.${term.key}`);
          filter.metadata[term.key] = term.value;
          break;
        case 'type':
          if (filter.types.length) throw repeated('type');
          if (!(tokenTypes as readonly string[]).includes(term.value)) {
            throw badRequest('The search query is not valid; see errors.', {
              'body.query': [`type ${term.value} is not a token type (${tokenTypes.join(', ')})`],
            });
          }
          filter.types.push(term.value);
          break;
        case 'container':
          if (filter.containers.length) throw repeated('container');
          filter.containers.push(term.value);
          break;
        case 'fingerprint':
          if (filter.fingerprints.length) throw repeated('fingerprint');
          filter.fingerprints.push(term.value);
          break;
        case 'created_at':
          if (filter.created.from || filter.created.to) throw repeated('created_at');
          filter.created = { ...term };
          break;
      }
    }
    const cursor = request.start ? decodeCursor(request.start, isTokenId) : undefined;
    const page = request.page ?? 1;
    const listFilter: TokenListFilter = {
      ...filter,
      readableUnder: searchableUnder(principal),
      after: cursor && { createdAt: cursor.createdAt, id: cursor.key },
      offset: cursor ? 0 : (page - 1) * request.size,
      size: request.size,
    };
    // A term compared with the data (a blind index, a fingerprint) matches only tokens the key's
    // token:read decision reveals: a match on any other would confirm a guess of data the key may
    // not see (a masked card's number from its BIN and last four). Kept out, such a token changes
    // nothing of the answer, its pages or cursors.
    const onData = filter.indexValues.length > 0 || filter.fingerprints.length > 0;
    const revealable = revealableContainers(principal);
    // A key reading tenant-wide reveals every row: nothing to keep out.
    const { rows, hasMore } =
      onData && revealable !== null
        ? await queries.listKept(principal.tenantId, { ...listFilter, revealableUnder: revealable }, (row) =>
            revealsToken(principal, readTargetOf(row)),
          )
        : await queries.list(principal.tenantId, listFilter);
    // Shown as the key's deciding token:read rule says (data, mask or nothing; a restriction
    // policy included) and on record as such; a row it may not read is listed without data and
    // without the summaries of its data (a key that may only search sees no card's BIN or last four).
    const opened = new Map(
      (await withData(principal, rows, requestId)).map((token) => [token.id, token] as const),
    );
    const data = rows.map((row) => opened.get(row.id) ?? summariesShown(tokenFields(row), undefined));
    const last = rows.at(-1);
    return { data, next: hasMore && last ? encodeCursor(last.created_at, last.id) : null, page };
  };
  const tag = 'Tokens';
  const summary =
    'Search the tenant’s live tokens the key may search by `data:<value>` (any of their search indexes), `metadata.<key>`, `type`, `container`, `fingerprint` and `created_at:[a TO b]`, terms joined by AND; `data` and `fingerprint` match only tokens the key’s token:read decision reveals; a result holds its data and summaries (a read) as that decision allows';
  return [
    defineRoute({
      method: 'post',
      path: '/v2/tokens/search',
      operationId: 'searchTokensV2',
      summary: `${summary}; by cursor (start, size), as Basis Theory’s v2 search`,
      tag,
      permission: 'token:search',
      returnsSensitive: ['token-data'],
      body: searchTokensV2Body,
      responses: {
        200: {
          description: 'A page of tokens, newest first; pagination.next is absent on the last page',
          schema: tokenCursorPageV2Schema,
        },
      },
      async handle({ principal, body, requestId }) {
        const { data, next } = await search(principal, body, requestId);
        return {
          status: 200,
          body: { pagination: { page_size: body.size, ...(next ? { next } : {}) }, data },
        };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/tokens/search',
      operationId: 'searchTokens',
      summary: `${summary}; page by page (page, size), as Basis Theory’s first search`,
      tag,
      permission: 'token:search',
      returnsSensitive: ['token-data'],
      body: searchTokensBody,
      responses: {
        200: {
          description: 'A page of tokens, newest first (no counts)',
          schema: cursorPageSchema(tokenSchema),
        },
      },
      async handle({ principal, body, requestId }) {
        const { data, next, page } = await search(principal, body, requestId);
        return {
          status: 200,
          body: {
            pagination: {
              total_items: null,
              page_number: page,
              page_size: body.size,
              total_pages: null,
              next,
            },
            data,
          },
        };
      },
    }),
  ];
}
