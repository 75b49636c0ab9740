import { z } from 'zod';
import {
  conflict,
  decodeCursor,
  defineRoute,
  encodeCursor,
  forbidden,
  notFound,
  pageQuery,
  paginated,
  repeatable,
  type Clock,
  type Pool,
  type Principal,
  type RouteDefinition,
} from '@tokenvault/platform';
import type { ReadModelConsistency } from '@tokenvault/cqrs';
import type { EventStore } from '@tokenvault/eventstore';
import type { Vault } from '@tokenvault/vault';
import {
  associationParams,
  containerPath,
  createTokenBody,
  cursorPageSchema,
  paginatedSchema,
  parentParams,
  tokenId,
  tokenParams,
  tokenCursorPageV2Schema,
  tokenSchema,
  tokenTypeSchema,
  updateTokenBody,
  usageReportSchema,
} from '@tokenvault/contracts';
import { openTokens } from '../commands/open-token.ts';
import { ReadAuditor } from '../commands/read-audit.ts';
import { usageReport } from '../queries/usage.ts';
import { TokenCommands } from '../commands/tokens.ts';
import { allowedOnAll, allowedOnAny } from '../domain/access.ts';
import { TokenQueries, tokenFields, type TokenRow } from '../queries/tokens.ts';

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
  })
  .superRefine((query, context) => {
    if (query.page !== undefined && query.start !== undefined) {
      context.addIssue({
        code: 'custom',
        path: ['start'],
        message: 'Give either page or start (a cursor), not both',
      });
    }
    const known = new Set(['type', 'container', 'page', 'size', 'start']);
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
 * `metadata` of GET /v2/tokens: a JSON object of string values, as the hosted anchor's Node SDK
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

/** The containers under which the key may read, from its rules; null when it may read them all. */
const readableUnder = (principal: Principal) =>
  principal.permissions.has('token:read')
    ? null
    : principal.rules.filter((rule) => rule.permissions.includes('token:read')).map((rule) => rule.container);

export interface TokenRouteDeps {
  store: EventStore;
  appPool: Pool;
  vault: Vault;
  consistency: ReadModelConsistency;
  /** The plan's monthly active tokens, shown in the usage report. */
  includedMonthlyActiveTokens: number;
  /** Every timestamp and expiry check of tokens. */
  clock: Clock;
}

export function tokenRoutes(deps: TokenRouteDeps): RouteDefinition[] {
  const { store, appPool, vault, consistency, clock } = deps;
  const queries = new TokenQueries(appPool, clock);
  const commands = new TokenCommands(store, vault, queries, clock);
  const readAuditor = new ReadAuditor(store, clock);

  /** A live token of the caller's tenant on which the caller holds the permission, or 404/403. */
  const tokenFor = async (
    principal: Principal,
    id: string,
    permission: string,
    mode: 'any' | 'all' = 'any',
  ) => {
    const row = await queries.get(principal.tenantId, id);
    if (!row) throw notFound('No token with this id.');
    const allowed = mode === 'any' ? allowedOnAny : allowedOnAll;
    if (!allowed(principal, permission, row.containers)) {
      throw forbidden(`This API key lacks ${permission} on the containers of token ${id}.`);
    }
    return row;
  };

  /** Opens tokens for a reader; the reads are on record before the data leaves. */
  const withData = async (principal: Principal, rows: TokenRow[], requestId: string) => {
    const opened = await openTokens({ store, vault }, rows);
    const tokens = rows.map((row, index) => ({ ...tokenFields(row), data: opened[index] }));
    await readAuditor.record(
      principal,
      rows.map((row) => ({ tokenId: row.id, type: row.type })),
      requestId,
    );
    return tokens;
  };
  /** One page of the token list (GET /tokens and GET /v2/tokens), opened and on record. */
  const listTokens = async (
    principal: Principal,
    filter: {
      type: string[];
      container: string[];
      metadata: Record<string, string>;
      start?: string | undefined;
      page: number;
      size: number;
    },
    requestId: string,
  ) => {
    const cursor = filter.start ? decodeCursor(filter.start, isTokenId) : undefined;
    const { rows, hasMore } = await queries.list(principal.tenantId, {
      types: filter.type,
      containers: filter.container,
      readableUnder: readableUnder(principal),
      metadata: filter.metadata,
      after: cursor && { createdAt: cursor.createdAt, id: cursor.key },
      offset: cursor ? 0 : (filter.page - 1) * filter.size,
      size: filter.size,
    });
    const last = rows.at(-1);
    return {
      cursor,
      next: hasMore && last ? encodeCursor(last.created_at, last.id) : null,
      data: await withData(principal, rows, requestId),
    };
  };
  const tag = 'Tokens';
  return [
    defineRoute({
      method: 'post',
      path: '/tokens',
      operationId: 'createToken',
      summary: 'Create a token (deduplicated when asked or when the tenant setting is on)',
      tag,
      permission: 'token:create',
      body: createTokenBody,
      sealedBodyFields: ['data'],
      responses: {
        201: { description: 'Created; the response never echoes the data', schema: tokenSchema },
        200: { description: 'Deduplicated: an existing token with the same data', schema: tokenSchema },
      },
      async handle({ principal, body, requestId }) {
        const result = await commands.create(principal, body, requestId);
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
        'List the tenant’s live tokens the key may read, with their data, newest first; filter by type, container (and below) and metadata.<key>=<value>; page by page or by cursor (pagination.next)',
      tag,
      permission: 'token:read',
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
        const { cursor, next, data } = await listTokens(principal, { ...query, metadata, page }, requestId);
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
        'List the tenant’s live tokens the key may read, as the hosted anchor’s v2 API: by cursor only (start, size); filter by type, container (and below) and metadata (a JSON object of key/value pairs, all must hold)',
      tag,
      permission: 'token:read',
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
          { ...query, metadata: query.metadata ?? {}, page: 1 },
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
        'Update a token by JSON merge patch (RFC 7396) of data, metadata, containers and expires_at; application/merge-patch+json or application/json',
      tag,
      permission: 'token:update',
      params: tokenParams,
      body: updateTokenBody,
      sealedBodyFields: ['data'],
      bodyMediaTypes: ['application/merge-patch+json', 'application/json'],
      responses: {
        200: {
          description: 'Updated (or unchanged); the response never echoes the data',
          schema: tokenSchema,
        },
      },
      async handle({ principal, params, body, requestId }) {
        // An expired token is gone for updates too (404), like for reads.
        await tokenFor(principal, params.id, 'token:update', 'all');
        const updated = await commands.update(principal, params.id, body, requestId);
        return { status: 200, headers: await consistency.afterWrite(updated.position), body: updated.token };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/tokens/:id',
      operationId: 'getToken',
      summary: 'Get a token with its data',
      tag,
      permission: 'token:read',
      params: tokenParams,
      responses: { 200: { description: 'The token', schema: tokenSchema } },
      async handle({ principal, params, requestId }) {
        const row = await tokenFor(principal, params.id, 'token:read');
        const [token] = await withData(principal, [row], requestId);
        return { status: 200, body: token };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/tokens/:parent_id/children/:child_id',
      operationId: 'associateChildToken',
      summary: 'Associate a token as a child of another (idempotent)',
      tag,
      permission: 'token:read',
      params: associationParams,
      responses: { 204: { description: 'Associated (or already was)' } },
      async handle({ principal, params, requestId }) {
        await tokenFor(principal, params.parent_id, 'token:read');
        await tokenFor(principal, params.child_id, 'token:read');
        const associated = await commands.associate(principal, params.parent_id, params.child_id, requestId);
        return { status: 204, headers: await consistency.afterWrite(associated.position) };
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/tokens/:parent_id/children/:child_id',
      operationId: 'dissociateChildToken',
      summary: 'Remove a parent/child association',
      tag,
      permission: 'token:delete',
      params: associationParams,
      responses: { 204: { description: 'Removed' } },
      async handle({ principal, params, requestId }) {
        await tokenFor(principal, params.parent_id, 'token:delete', 'all');
        await tokenFor(principal, params.child_id, 'token:delete', 'all');
        const dissociated = await commands.dissociate(
          principal,
          params.parent_id,
          params.child_id,
          requestId,
        );
        return { status: 204, headers: await consistency.afterWrite(dissociated.position) };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/tokens/:parent_id/children',
      operationId: 'createChildToken',
      summary: 'Create a token as a child of another, in one event',
      tag,
      permission: 'token:create',
      params: parentParams,
      body: createTokenBody,
      sealedBodyFields: ['data'],
      responses: {
        201: { description: 'Created, without data', schema: tokenSchema },
        200: {
          description: 'Deduplicated: an existing token, now a child of the parent',
          schema: tokenSchema,
        },
      },
      async handle({ principal, params, body, requestId }) {
        await tokenFor(principal, params.parent_id, 'token:read');
        const result = await commands.create(principal, body, requestId, params.parent_id);
        if (result.created) {
          return { status: 201, headers: await consistency.afterWrite(result.position), body: result.token };
        }
        if (result.token.id === params.parent_id) {
          throw conflict('The data equals the parent’s own: a token cannot be its own child.');
        }
        const associated = await commands.associate(principal, params.parent_id, result.token.id, requestId);
        return {
          status: 200,
          headers: await consistency.afterWrite(associated.position),
          body: result.token,
        };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/tokens/:parent_id/children',
      operationId: 'listChildTokens',
      summary: 'List a token’s children with their data (only those the key may read)',
      tag,
      permission: 'token:read',
      params: parentParams,
      query: z.strictObject({
        id: repeatable(tokenId),
        type: repeatable(tokenTypeSchema),
        ...pageQuery(100),
      }),
      responses: { 200: { description: 'A page of child tokens', schema: paginatedSchema(tokenSchema) } },
      async handle({ principal, params, query, requestId }) {
        await tokenFor(principal, params.parent_id, 'token:read');
        const { rows, total } = await queries.children(principal.tenantId, params.parent_id, {
          ids: query.id,
          types: query.type,
          readableUnder: readableUnder(principal),
          page: query.page,
          size: query.size,
        });
        return {
          status: 200,
          body: paginated(await withData(principal, rows, requestId), query.page, query.size, total),
        };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/tenants/self/reports/usage',
      operationId: 'getUsageReport',
      summary: 'Token usage of the tenant: live tokens by type and monthly active tokens',
      tag: 'Tenant',
      permission: 'report:read',
      responses: { 200: { description: 'The usage report', schema: usageReportSchema } },
      async handle({ principal }) {
        // Usage is written by the projector: it first catches up with every write made so far.
        const headers = await consistency.beforeTrailingRead();
        return {
          status: 200,
          headers,
          body: await usageReport(appPool, principal.tenantId, deps.includedMonthlyActiveTokens, clock.now()),
        };
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/tokens/:id',
      operationId: 'deleteToken',
      summary: 'Delete a token',
      tag,
      permission: 'token:delete',
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
