import type { Request } from 'express';
import { z } from 'zod';
import { validationProblem } from './errors.ts';
import { inputLimits, screenInput } from './input.ts';

// The route model: what a route declares (method, path, permission, schemas, handler) and what a
// handler is given. The express app (http-app.ts), in-process calls (route-call.ts) and the OpenAPI
// document (openapi-document.ts) all read routes from here.

/**
 * A grant of token permissions on one container path and everything below it: an application's
 * access rule. Which rule decides, and what its transform shows, is `decidingRule` of
 * `@tokenvault/contracts`.
 */
export interface ContainerRule {
  container: string;
  permissions: string[];
  /** What a read it decides shows; absent (rules stored before transforms): reveal. */
  transform?: 'reveal' | 'mask' | 'redact';
  /** Evaluation order, 1 first; absent: after every rule with one. */
  priority?: number;
  description?: string;
}

/** Who is calling: resolved from the API key before any handler runs. */
export interface Principal {
  tenantId: string;
  actorId: string;
  actorType: 'application' | 'user';
  permissions: ReadonlySet<string>;
  rules: readonly ContainerRule[];
  /** The tenant's settings, e.g. deduplicate_tokens: "true". */
  tenantSettings: Readonly<Record<string, string>>;
  /** The application's own rate limit (requests per minute), when it has one. */
  rateLimitPerMinute?: number;
  /** When the calling API key expires (ISO 8601), when it does: no key it mints outlives it. */
  keyExpiresAt?: string;
}

export interface HandlerContext<Params, Query, Body> {
  params: Params;
  query: Query;
  body: Body;
  principal: Principal;
  requestId: string;
  headers: Request['headers'];
  /** The client's address: the socket's, or as trusted proxies forwarded it (TRUST_PROXY). */
  clientAddress?: string;
}

export interface HandlerResult {
  status: number;
  /** Sent as JSON. */
  body?: unknown;
  /** A page instead of JSON (for people following a link, not for API clients). */
  html?: string;
  headers?: Record<string, string>;
}

/**
 * At most `max` calls in flight per tenant, across every gateway process: each call holds a slot
 * while it runs, and past the cap is answered 429 (`Retry-After: 1`). Routes that name the same
 * cap share its slots.
 */
export interface TenantConcurrencyCap {
  /** The cap's name (its Redis key): the routes naming it share one count. */
  name: string;
  max: number;
  /** What the 429 says the tenant has too many of in flight: "reactor invocations". */
  inFlight: string;
  /** The longest a slot is held: a slot whose holder crashed frees itself after this. */
  slotTtlMs: number;
  /**
   * The call's work goes on after it answered (an accepted async run): its slot is held until the
   * promise this returns resolves (or the slot lapses); undefined releases it as the call ends.
   */
  holdUntil?(result: HandlerResult): Promise<void> | undefined;
}

type AnyZodObject = z.ZodObject<z.ZodRawShape>;

/** What a response can hold that is kept nowhere, each with why (a route's `returnsSensitive`). */
export const sensitiveData = {
  'token-data': 'token data, which outlives neither the token nor a narrowed rule',
  /**
   * A token's or intent's `card` and `bank` summaries and `fingerprint`: the only kind whose
   * answers are still kept, with those fields removed (the idempotency guard).
   */
  'token-summary':
    'card and bank summaries and the fingerprint, which follow the caller’s read decision at the time: a kept copy would outlive the decision and the token',
  'api-key': 'a new API key, of which only the SHA-256 is kept',
  'session-token': 'a session token, of which only the SHA-256 is kept',
  'signing-secret': 'a webhook signing secret, shown only to whoever rotates or reads it',
  'proxy-key': 'a proxy key, which invokes the proxy',
  configuration:
    'a reactor’s or proxy’s configuration (a processor’s credentials), which must not outlive its rotation or deletion',
} as const;
export type SensitiveData = keyof typeof sensitiveData;

export interface RouteDefinition<
  P extends AnyZodObject = AnyZodObject,
  Q extends AnyZodObject = AnyZodObject,
  B extends z.ZodType = z.ZodType,
> {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** Express-style path, e.g. `/tokens/:id`. */
  path: string;
  /**
   * The operation's stable name in the OpenAPI document and the generated SDK (docs/api-contract.md):
   * lowerCamelCase, a verb then the resource in the singular (`createToken`, `getToken`,
   * `updateToken`, `deleteToken`), `list` + plural for collections (`listChildTokens`), and the
   * action's own verb for actions (`invokeReactor`, `acceptInvitation`). Never renamed once shipped.
   */
  operationId: string;
  summary: string;
  tag: string;
  /**
   * Checked before the handler runs; `anyCaller` for routes any authenticated caller may call
   * whatever it holds; null for routes that need no API key.
   */
  permission: string | null;
  params?: P;
  query?: Q;
  /** A schema that takes `undefined` (`.optional()`) lets the body be left out. */
  body?: B;
  /**
   * Top-level body fields encrypted before they are stored (token `data`): NUL is allowed in
   * their strings, since they never become a PostgreSQL text value.
   */
  sealedBodyFields?: readonly string[];
  /**
   * What the route's responses can hold that nothing may keep (`[]`: none of it). Required, so
   * that every route says it. On POST, PUT and PATCH an Idempotency-Key then keeps only that the
   * request completed and its status, never the response: a token's data must not outlive its
   * deletion or a narrowed rule, and a secret is shown once (only its SHA-256 is kept); a replay
   * is a 409 saying why. A route whose only kind is `token-summary` has its answer kept without
   * the tokens' `card`, `bank` and `fingerprint` (a replay answers that copy, its id and status
   * intact). `packages/runtime/src/route-returns.int.spec.ts` reads every route's
   * response schemas and fails when one can hold such data undeclared.
   */
  returnsSensitive: readonly SensitiveData[];
  /**
   * The body's media types in the OpenAPI document (default application/json). Every JSON type
   * (`application/*+json`) is parsed alike; this only says which ones the route is meant for.
   */
  bodyMediaTypes?: readonly string[];
  /** A cap on this route's calls in flight per tenant, held by the route guard (API-key calls over HTTP). */
  tenantConcurrency?: TenantConcurrencyCap;
  responses: Record<number, { description: string; schema?: z.ZodType }>;
  handle(context: HandlerContext<z.output<P>, z.output<Q>, z.output<B>>): Promise<HandlerResult>;
}

/**
 * The `permission` of a route that any API key (or member's session) may call, whatever it holds:
 * what a caller reads about itself (`GET /applications/key`) or about the API (`GET /permissions`).
 * No permission is named so, so none can be granted or withheld.
 */
export const anyCaller = 'authenticated';

/** Keeps each route's own types while allowing heterogeneous lists of routes. */
export function defineRoute<P extends AnyZodObject, Q extends AnyZodObject, B extends z.ZodType>(
  route: RouteDefinition<P, Q, B>,
): RouteDefinition {
  return route;
}

/**
 * A query parameter that may be given once or repeated (`?type=a&type=b`), at most
 * `inputLimits.maxRepeatedValues` times.
 */
export function repeatable<T extends z.ZodType>(item: T) {
  // maxItems tells clients the cap up front; the refine below is what answers past it (a 400
  // naming the cap, where the array's own max would only fail the union).
  return z
    .union([item, z.array(item).meta({ maxItems: inputLimits.maxRepeatedValues })])
    .optional()
    .transform((value) => (value === undefined ? [] : Array.isArray(value) ? value : [value]))
    .refine(
      (values) => values.length <= inputLimits.maxRepeatedValues,
      `At most ${inputLimits.maxRepeatedValues} values`,
    ) as unknown as z.ZodType<z.output<T>[], z.input<T> | z.input<T>[] | undefined>;
}

export const pageQuery = (maxSize: number) => ({
  page: z.coerce.number().int().min(1).default(1),
  size: z.coerce.number().int().min(1).max(maxSize).default(20),
});

export interface Pagination {
  total_items: number;
  page_number: number;
  page_size: number;
  total_pages: number;
}

export function paginated<T>(data: T[], page: number, size: number, totalItems: number) {
  return {
    pagination: {
      total_items: totalItems,
      page_number: page,
      page_size: size,
      total_pages: Math.ceil(totalItems / size),
    } satisfies Pagination,
    data,
  };
}

/** What else a request carries that may name its caller: a session (bearer or cookie). */
export interface CallerCredentials {
  method: string;
  headers: Request['headers'];
}

export type Authenticate = (apiKey: string | undefined, request?: CallerCredentials) => Promise<Principal>;

/** The naming rule of operationId (see RouteDefinition.operationId). */
export const operationIdPattern =
  /^(create|list|get|update|delete|associate|dissociate|invoke|resend|accept|request|rotate|ping|redeliver|search|tokenize|detokenize)[A-Z][A-Za-z0-9]*$/;

/** Whether the route's body schema takes no body at all (it is `.optional()`). */
export const bodyMayBeLeftOut = (route: RouteDefinition): boolean =>
  route.body !== undefined && route.body.safeParse(undefined).success;

/**
 * Tenant-wide, or on at least one container through a rule: a token route then checks the
 * containers of the tokens it touches.
 */
export function holdsPermission(principal: Principal, permission: string): boolean {
  return (
    principal.permissions.has(permission) ||
    principal.rules.some((rule) => rule.permissions.includes(permission))
  );
}

function parseOrThrow<S extends z.ZodType>(
  schema: S | undefined,
  value: unknown,
  where: 'body' | 'query' | 'path',
) {
  if (!schema) return undefined;
  const result = schema.safeParse(value);
  if (!result.success) throw validationProblem(result.error, where);
  return result.data;
}

/**
 * The route's path parameters, query and body: screened (depth, NUL, unpaired surrogates), then
 * each checked by its schema (400 naming the field).
 */
export function parseRouteInput(
  route: RouteDefinition,
  input: { params?: unknown; query?: unknown; body?: unknown },
) {
  screenInput(input.params ?? {}, 'path');
  screenInput(input.query ?? {}, 'query');
  if (route.body) screenInput(input.body, 'body', { sealedFields: route.sealedBodyFields ?? [] });
  return {
    params: parseOrThrow(route.params, input.params ?? {}, 'path') ?? {},
    query: parseOrThrow(route.query, input.query ?? {}, 'query') ?? {},
    body: parseOrThrow(route.body, input.body, 'body'),
  };
}
