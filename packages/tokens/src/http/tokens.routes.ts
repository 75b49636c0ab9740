import { z } from 'zod';
import {
  decodeCursor,
  defineRoute,
  encodeCursor,
  repeatable,
  type Principal,
  type RouteDefinition,
} from '@tokenvault/platform';
import {
  containerPath,
  createTokenBody,
  createTokenRequestBody,
  cursorPageSchema,
  tokenId,
  tokenParams,
  tokenCursorPageV2Schema,
  tokenSchema,
  writtenTokenSchema,
  tokenTypeSchema,
  updateTokenBody,
} from '@tokenvault/contracts';
import { readTransform } from '../domain/access.ts';
import { summariesShown } from '../domain/token-details.ts';
import { readTargetOf, tokenFields } from '../queries/tokens.queries.ts';
import type { TokenRow } from '../queries/tokens.queries.ts';
import { readableUnder, type TokenAccess, type TokenRouteDeps } from './token-access.ts';

const metadataFilter = 'metadata.';
const maxMetadataFilters = 50;

/**
 * `GET /tokens`: `type` and `container` repeatable, any number of `metadata.<key>=<value>`
 * (all must hold), and `page` or a `start` cursor. Loose only for the `metadata.` parameters:
 * any other unknown parameter is a 400, as on every route.
 */
const listTokensQuery = z
  .looseObject({
    type: repeatable(tokenTypeSchema),
    container: repeatable(containerPath),
    page: z.coerce.number().int().min(1).optional(),
    size: z.coerce.number().int().min(1).max(100).default(20),
    /** The opaque cursor of a previous page's pagination.next (a token id can be 200 long). */
    start: z.string().min(1).max(400).optional(),
    include_data: z
      .enum(['true', 'false'])
      .default('true')
      .describe(
        '`false`: the tokens without their data (ids, types, containers, metadata, fingerprints, dates); not a read of any token: no read in the log, not counted as monthly active',
      ),
  })
  .superRefine((query, context) => {
    if (query.page !== undefined && query.start !== undefined) {
      context.addIssue({
        code: 'custom',
        path: ['start'],
        message: 'Give either page or start (a cursor), not both',
      });
    }
    const known = new Set(['type', 'container', 'page', 'size', 'start', 'include_data']);
    let filters = 0;
    for (const [name, value] of Object.entries(query)) {
      if (known.has(name)) continue;
      const key = name.startsWith(metadataFilter) ? name.slice(metadataFilter.length) : undefined;
      if (key === undefined || key.length === 0 || key.length > 100) {
        context.addIssue({ code: 'custom', path: [name], message: 'Unknown field' });
      } else if (typeof value !== 'string') {
        context.addIssue({ code: 'custom', path: [name], message: 'Give each metadata key once' });
      } else if (value.length > 500) {
        context.addIssue({ code: 'custom', path: [name], message: 'At most 500 characters' });
      } else if (++filters > maxMetadataFilters) {
        context.addIssue({
          code: 'custom',
          path: [name],
          message: `At most ${maxMetadataFilters} metadata filters`,
        });
      }
    }
  });

/**
 * `metadata` of GET /v2/tokens: a JSON object of string values, as Basis Theory's Node SDK
 * sends it (`metadata={"customer":"c-1"}`), with the limits of GET /tokens' `metadata.<key>`.
 */
const metadataJson = z
  .string()
  .max(64_000)
  .transform((text, context) => {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      context.addIssue({ code: 'custom', message: 'Must be a JSON object of string values' });
      return z.NEVER;
    }
  })
  .pipe(
    z
      .record(z.string().min(1).max(100), z.string().max(500))
      .refine((metadata) => Object.keys(metadata).length <= maxMetadataFilters, {
        message: `At most ${maxMetadataFilters} metadata filters`,
      }),
  );

/** `GET /v2/tokens`: cursor paging only (`start`, `size`), the filters of GET /tokens. */
const listTokensV2Query = z.strictObject({
  type: repeatable(tokenTypeSchema),
  container: repeatable(containerPath),
  metadata: metadataJson.optional(),
  size: z.coerce.number().int().min(1).max(100).default(20),
  /** The opaque cursor of a previous page's pagination.next. */
  start: z.string().min(1).max(400).optional(),
});

/** A token list's tie-break within a millisecond is the token id. */
const isTokenId = (key: unknown): key is string => typeof key === 'string' && tokenId.safeParse(key).success;

/** The token resource: create, list, get, update and delete tokens. */
export function tokenResourceRoutes(
  { consistency }: TokenRouteDeps,
  { queries, commands, tokenFor, withData }: TokenAccess,
): RouteDefinition[] {
  /**
   * One page of the token list (GET /tokens and GET /v2/tokens): opened and on record, or, when
   * the data is not asked for, neither opened nor a read.
   */
  const listTokens = async (
    principal: Principal,
    filter: {
      type: string[];
      container: string[];
      metadata: Record<string, string>;
      start?: string | undefined;
      page: number;
      size: number;
      includeData: boolean;
    },
    requestId: string,
  ) => {
    const cursor = filter.start ? decodeCursor(filter.start, isTokenId) : undefined;
    const decisionOn = (row: TokenRow) => readTransform(principal, 'token:read', readTargetOf(row));
    const readable = readableUnder(principal);
    const listFilter = {
      types: filter.type,
      containers: filter.container,
      readableUnder: readable,
      metadata: filter.metadata,
      after: cursor && { createdAt: cursor.createdAt, id: cursor.key },
      offset: cursor ? 0 : (filter.page - 1) * filter.size,
      size: filter.size,
    };
    // The SQL filter is the containers of the key's rules (and the higher impact levels a
    // restriction policy reads): the list never shows a token its GET refuses. A row under a
    // token:read rule's own container always has a deciding rule; only rows reached through a
    // higher impact level may be refused, so only then is each row decided before paging
    // (listKept reads more rows than the page). A key reading tenant-wide reads every row.
    const ruleContainers = new Set(
      principal.rules.filter((rule) => rule.permissions.includes('token:read')).map((rule) => rule.container),
    );
    const mayRefuseRows = readable?.some((container) => !ruleContainers.has(container)) ?? false;
    const { rows, hasMore } = mayRefuseRows
      ? await queries.listKept(principal.tenantId, listFilter, (row) => decisionOn(row) !== undefined)
      : await queries.list(principal.tenantId, listFilter);
    const last = rows.at(-1);
    return {
      cursor,
      next: hasMore && last ? encodeCursor(last.created_at, last.id) : null,
      data: filter.includeData
        ? await withData(principal, rows, requestId)
        : rows.map((row) => summariesShown(tokenFields(row), decisionOn(row))),
    };
  };
  const tag = 'Tokens';
  return [
    defineRoute({
      method: 'post',
      path: '/tokens',
      operationId: 'createToken',
      summary:
        'Create a token (deduplicated when asked or when the tenant setting is on, for a key that reveals tokens where it goes), or make one of a token intent (token_intent_id), which consumes it (its answer’s summaries and fingerprint as the key’s read decision shows them); a unique search index needs a key that reveals every token (403)',
      tag,
      permission: 'token:create',
      // Its answer carries the token's summaries and fingerprint: kept without them.
      returnsSensitive: ['token-summary'],
      body: createTokenRequestBody,
      sealedBodyFields: ['data'],
      responses: {
        201: { description: 'Created; the response never echoes the data', schema: writtenTokenSchema },
        200: {
          description: 'Deduplicated: an existing token with the same data',
          schema: writtenTokenSchema,
        },
      },
      async handle({ principal, body, requestId }) {
        const { token_intent_id: intentId, type: _type, data: _data, ...fields } = body;
        if (intentId !== undefined) {
          const made = await commands.createFromIntent(principal, intentId, fields, requestId);
          // The data is the intent's, not the caller's (a public key collected it): the answer's
          // summaries and fingerprint as the key's read decision on the new token shows them.
          const shown = summariesShown(
            made.token,
            readTransform(principal, 'token:read', {
              containers: made.token.containers,
              privacy: made.token.privacy,
            }),
          );
          return { status: 201, headers: await consistency.afterWrite(made.position), body: shown };
        }
        // The body schema checked it as createTokenBody does: this only gives its defaults.
        const result = await commands.create(principal, createTokenBody.parse(body), requestId);
        // An equal token someone else created a moment ago may still be on its way to the read
        // models (PROJECTIONS=async): the answer waits until they have every write so far.
        if (!result.created)
          return { status: 200, headers: await consistency.afterLatestWrites(), body: result.token };
        return { status: 201, headers: await consistency.afterWrite(result.position), body: result.token };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/tokens',
      operationId: 'listTokens',
      summary:
        'List the tenant’s live tokens the key may read (its read decision on each, with or without data), with their data (a read of each) unless include_data=false, newest first; filter by type, container (and below) and metadata.<key>=<value>; page by page or by cursor (pagination.next)',
      tag,
      permission: 'token:read',
      returnsSensitive: ['token-data'],
      query: listTokensQuery,
      responses: {
        200: { description: 'A page of tokens (no counts)', schema: cursorPageSchema(tokenSchema) },
      },
      async handle({ principal, query, requestId }) {
        const metadata: Record<string, string> = {};
        for (const [name, value] of Object.entries(query)) {
          if (name.startsWith(metadataFilter)) metadata[name.slice(metadataFilter.length)] = value as string;
        }
        const page = query.page ?? 1;
        const { cursor, next, data } = await listTokens(
          principal,
          { ...query, metadata, page, includeData: query.include_data === 'true' },
          requestId,
        );
        return {
          status: 200,
          body: {
            // Never counted: counting a large tenant's tokens would cost more than the page.
            pagination: {
              total_items: null,
              page_number: cursor ? null : page,
              page_size: query.size,
              total_pages: null,
              next,
            },
            data,
          },
        };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v2/tokens',
      operationId: 'listTokensV2',
      summary:
        'List the tenant’s live tokens the key may read, as Basis Theory’s v2 API: by cursor only (start, size); filter by type, container (and below) and metadata (a JSON object of key/value pairs, all must hold)',
      tag,
      permission: 'token:read',
      returnsSensitive: ['token-data'],
      query: listTokensV2Query,
      responses: {
        200: {
          description: 'A page of tokens; pagination.next is absent on the last page',
          schema: tokenCursorPageV2Schema,
        },
      },
      async handle({ principal, query, requestId }) {
        const { next, data } = await listTokens(
          principal,
          { ...query, metadata: query.metadata ?? {}, page: 1, includeData: true },
          requestId,
        );
        return {
          status: 200,
          body: { pagination: { page_size: query.size, ...(next ? { next } : {}) }, data },
        };
      },
    }),
    defineRoute({
      method: 'patch',
      path: '/tokens/:id',
      operationId: 'updateToken',
      summary:
        'Update a token by JSON merge patch (RFC 7396) of data, metadata, containers and expires_at; application/merge-patch+json or application/json. A key whose token:read does not reveal the token replaces its data whole (complete data of the type, else a 400 naming body.data)',
      tag,
      permission: 'token:update',
      // Its answer carries the token's summaries and fingerprint: kept without them.
      returnsSensitive: ['token-summary'],
      params: tokenParams,
      body: updateTokenBody,
      sealedBodyFields: ['data'],
      bodyMediaTypes: ['application/merge-patch+json', 'application/json'],
      responses: {
        200: {
          description: 'Updated (or unchanged); the response never echoes the data',
          schema: writtenTokenSchema,
        },
      },
      async handle({ principal, params, body, requestId }) {
        // An expired token is gone for updates too (404), like for reads.
        await tokenFor(principal, params.id, 'token:update', 'all');
        const updated = await commands.update(principal, params.id, body, requestId);
        // The answer's summaries as the key's read decision on the token after the update shows
        // them: a key that may only update sees no card's BIN or last four.
        const shown = summariesShown(
          updated.token,
          readTransform(principal, 'token:read', {
            containers: updated.token.containers,
            privacy: updated.token.privacy,
          }),
        );
        return { status: 200, headers: await consistency.afterWrite(updated.position), body: shown };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/tokens/:id',
      operationId: 'getToken',
      summary: 'Get a token with its data',
      tag,
      permission: 'token:read',
      returnsSensitive: ['token-data'],
      params: tokenParams,
      responses: { 200: { description: 'The token', schema: tokenSchema } },
      async handle({ principal, params, requestId }) {
        const row = await tokenFor(principal, params.id, 'token:read');
        const [token] = await withData(principal, [row], requestId);
        return { status: 200, body: token };
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/tokens/:id',
      operationId: 'deleteToken',
      summary: 'Delete a token',
      tag,
      permission: 'token:delete',
      returnsSensitive: [],
      params: tokenParams,
      responses: { 204: { description: 'Deleted' } },
      async handle({ principal, params, requestId }) {
        // An expired token is gone for deletes too (404), like for reads.
        await tokenFor(principal, params.id, 'token:delete', 'all');
        const deleted = await commands.delete(principal, params.id, requestId);
        return { status: 204, headers: await consistency.afterWrite(deleted.position) };
      },
    }),
  ];
}
