import { randomUUID } from 'node:crypto';
import { STATUS_CODES, createServer, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { parse as parseQueryString } from 'node:querystring';
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { z } from 'zod';
import { Problem, badRequest, notFound, payloadTooLarge, validationProblem } from './errors.ts';
import { inputLimits, screenInput } from './input.ts';
import type { Logger } from './logger.ts';
import { callRoute } from './route-call.ts';
import { httpMetrics } from './metrics.ts';
import type { RouteGuard } from './route-guard.ts';
import { incomingRequestId } from './request-id.ts';

/** A grant of token permissions on one container path and everything below it. */
export interface ContainerRule {
  container: string;
  permissions: string[];
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
}

export interface HandlerContext<Params, Query, Body> {
  params: Params;
  query: Query;
  body: Body;
  principal: Principal;
  requestId: string;
  headers: Request['headers'];
  /** The client's address as the socket has it (per-client caps of routes without a key). */
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

type AnyZodObject = z.ZodObject<z.ZodRawShape>;

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
  /** Checked before the handler runs; null for routes that need no API key. */
  permission: string | null;
  params?: P;
  query?: Q;
  body?: B;
  /**
   * Top-level body fields encrypted before they are stored (token `data`): NUL is allowed in
   * their strings, since they never become a PostgreSQL text value.
   */
  sealedBodyFields?: readonly string[];
  /**
   * The body's media types in the OpenAPI document (default application/json). Every JSON type
   * (`application/*+json`) is parsed alike; this only says which ones the route is meant for.
   */
  bodyMediaTypes?: readonly string[];
  responses: Record<number, { description: string; schema?: z.ZodType }>;
  handle(context: HandlerContext<z.output<P>, z.output<Q>, z.output<B>>): Promise<HandlerResult>;
}

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

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      requestId: string;
      /** Set when a JSON body is empty or whitespace only (after a byte-order mark). */
      blankJsonBody?: boolean;
    }
  }
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

/** What routes mount on: an express application or router. */
export type RouteTarget = Pick<Router, 'get' | 'post' | 'put' | 'patch' | 'delete'>;

export function mountRoutes(
  router: RouteTarget,
  routes: RouteDefinition[],
  authenticate: Authenticate,
  guard?: RouteGuard,
): void {
  for (const route of routes) {
    router[route.method](route.path, async (req: Request, res: Response) => {
      // The JSON parser reads an empty body as {}: a route that takes a body refuses it instead.
      if (route.body && req.blankJsonBody) throw emptyBody();
      const principal =
        route.permission === null
          ? anonymous
          : await authenticate(req.get('svc-api-key') ?? undefined, {
              method: req.method,
              headers: req.headers,
            });
      const call = () =>
        callRoute(
          route,
          {
            params: req.params,
            query: req.query,
            body: req.body,
            headers: req.headers,
            ...(req.socket.remoteAddress ? { clientAddress: req.socket.remoteAddress } : {}),
          },
          principal,
          req.requestId,
        );
      const result = await (guard && route.permission !== null
        ? guard({ route, req, res, principal }, call)
        : call());
      for (const [name, value] of Object.entries(result.headers ?? {})) res.setHeader(name, value);
      if (result.html !== undefined) res.status(result.status).type('html').send(result.html);
      else if (result.body === undefined) res.status(result.status).end();
      else res.status(result.status).json(result.body);
    });
  }
}

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

const anonymous: Principal = {
  tenantId: '',
  actorId: '',
  actorType: 'user',
  permissions: new Set(),
  rules: [],
  tenantSettings: {},
};

export interface AppOptions {
  logger: Logger;
  bodyLimit: string;
  /** Mounted before the routes: health checks and documents. */
  configure(app: express.Express): void;
}

/** The express application shell: request ids, logging, JSON parsing, the central error handler. */
export function createHttpApp(options: AppOptions): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  // Every value is kept (no silent cut at 1,000 pairs): the request line is already bounded by
  // Node's header size limit, and repeatable() bounds each parameter with a 400.
  app.set('query parser', (query: string) => parseQueryString(query, '&', '=', { maxKeys: 0 }));
  app.use((req, res, next) => {
    req.requestId = incomingRequestId(req) ?? randomUUID();
    res.setHeader('x-request-id', req.requestId);
    // Every response is private to a tenant (some carry token data): no cache may keep one.
    res.setHeader('cache-control', 'no-store');
    next();
  });
  app.use(httpMetrics());
  // One line per request, built only when its level is enabled (pino-http's per-request child
  // logger cost a measurable share of throughput). Never headers or bodies.
  app.use((req, res, next) => {
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      const status = res.statusCode;
      const level = status >= 500 ? 'error' : status >= 400 ? 'info' : 'debug';
      if (!options.logger.isLevelEnabled(level)) return;
      options.logger[level](
        {
          requestId: req.requestId,
          method: req.method,
          path: req.path,
          status,
          ms: Number(process.hrtime.bigint() - started) / 1e6,
        },
        'request completed',
      );
    });
    next();
  });
  app.use(
    express.json({
      limit: options.bodyLimit,
      strict: false,
      type: ['application/json', 'application/*+json'],
      verify(req, _res, raw) {
        if (isBlank(raw)) (req as Request).blankJsonBody = true;
      },
    }),
  );
  options.configure(app);
  return app;
}

const utf8ByteOrderMark = Buffer.from([0xef, 0xbb, 0xbf]);

/**
 * Whether a raw JSON body is empty or whitespace only. A leading UTF-8 byte-order mark is
 * skipped, as the JSON parser skips it (docs/decisions.md, "Empty bodies and byte-order marks").
 */
function isBlank(raw: Buffer): boolean {
  const start = raw.subarray(0, 3).equals(utf8ByteOrderMark) ? 3 : 0;
  for (let index = start; index < raw.length; index++) {
    const byte = raw[index];
    if (byte !== 0x20 && byte !== 0x09 && byte !== 0x0a && byte !== 0x0d) return false;
  }
  return true;
}

const emptyBody = () =>
  badRequest('The body is empty: send a JSON value.', {
    body: ['Required: must not be empty or whitespace only'],
  });

/** Last in the chain: unknown routes, then every error as problem+json. */
export function finishHttpApp(app: express.Express, logger: Logger): void {
  app.use(() => {
    throw notFound('No such route.');
  });
  app.use((error: unknown, req: Request, res: Response, _next: NextFunction) => {
    const blank = req.blankJsonBody && (error as MiddlewareError | null)?.type === 'entity.parse.failed';
    const problem = blank ? emptyBody() : toProblem(error);
    if (problem.status >= 500) logger.error({ err: error, requestId: req.requestId }, 'request failed');
    for (const [name, value] of Object.entries(problem.headers)) res.setHeader(name, value);
    res
      .status(problem.status)
      .type('application/problem+json')
      .send(JSON.stringify({ ...problem.toJSON(), request_id: req.requestId }));
  });
}

/** What express, its router and body-parser attach to the errors they raise. */
interface MiddlewareError {
  type?: string;
  status?: number;
  expose?: boolean;
  limit?: number;
  errno?: number;
  code?: string;
  syscall?: string;
}

/** zlib's errors (gzip, deflate, br), which body-parser passes on with status 400. */
function isDecompressionError(error: MiddlewareError): boolean {
  return (
    typeof error.errno === 'number' &&
    typeof error.code === 'string' &&
    /^(Z_|ERR_)/.test(error.code) &&
    error.syscall === undefined
  );
}

/** Never copies an error's message into the problem: it can quote the input. */
function toProblem(error: unknown): Problem {
  if (error instanceof Problem) return error;
  // The router's decodeURIComponent of a path parameter (`/tokens/%zz`).
  if (error instanceof URIError) {
    return badRequest('The path holds malformed percent-encoding.', {
      path: ['Malformed percent-encoding (% must be followed by two hex digits of UTF-8)'],
    });
  }
  const middlewareError = (error ?? {}) as MiddlewareError;
  switch (middlewareError.type) {
    case 'entity.parse.failed':
      return badRequest('The body is not well-formed JSON.', { body: ['Malformed JSON'] });
    case 'entity.too.large':
      return payloadTooLarge(`The body is larger than the limit of ${middlewareError.limit ?? '?'} bytes.`);
    case 'encoding.unsupported':
      return new Problem(
        415,
        'unsupported-media-type',
        'Unsupported Media Type',
        'Content-Encoding must be identity, gzip, deflate or br.',
      );
    case 'charset.unsupported':
      return new Problem(415, 'unsupported-media-type', 'Unsupported Media Type', 'Use UTF-8 JSON.');
    case 'request.aborted':
      return badRequest('The request was aborted.');
    case 'request.size.invalid':
      return badRequest('The body is not as long as Content-Length says.', { body: ['Truncated'] });
    case undefined:
      // No type, like a type not named above: the checks below.
      break;
  }
  if (isDecompressionError(middlewareError)) {
    return badRequest('The body could not be decompressed as its Content-Encoding says.', {
      body: ['Not valid for its Content-Encoding'],
    });
  }
  // Any other client error express or its middleware raised: its status, a generic text.
  const status = middlewareError.status;
  if (middlewareError.expose && status !== undefined && status >= 400 && status < 500) {
    return problemOfStatus(status, 'The request was refused.');
  }
  return new Problem(500, 'internal', 'Internal Server Error', 'An unexpected error occurred.');
}

/** A problem named after its HTTP status (`Request Timeout`, slug `request-timeout`). */
function problemOfStatus(status: number, detail: string): Problem {
  const title = STATUS_CODES[status] ?? 'Bad Request';
  return new Problem(status, title.toLowerCase().replace(/\W+/g, '-'), title, detail);
}

/**
 * Serves the app like `app.listen`, and answers the requests Node's HTTP parser refuses (bad
 * framing, invalid bytes in the request line or a header, headers too large) with problem+json
 * instead of Node's empty answer.
 */
export async function listenHttp(app: express.Express, port: number, host: string): Promise<Server> {
  const server = createServer(app);
  server.on('clientError', answerClientError);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server;
}

function answerClientError(error: Error & { code?: string }, socket: Socket): void {
  // As Node does: answer unless the client is gone or a response has begun on this connection
  // (writing then would corrupt it).
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent: boolean } })._httpMessage;
  if (error.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const [status, detail] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'The request headers are too large.']
      : error.code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW'
        ? [413, 'The chunk extensions are too large.']
        : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? [408, 'The request took too long to arrive.']
          : [400, 'The request is not valid HTTP/1.1 (framing, request line or header bytes).'];
  const problem = problemOfStatus(status, detail);
  const body = JSON.stringify(problem.toJSON());
  socket.end(
    `HTTP/1.1 ${status} ${problem.title}\r\n` +
      'Content-Type: application/problem+json\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      'Cache-Control: no-store\r\n' +
      'Connection: close\r\n\r\n' +
      body,
  );
}

/** The naming rule of operationId (see RouteDefinition.operationId). */
export const operationIdPattern =
  /^(create|list|get|update|delete|associate|dissociate|invoke|resend|accept|request)[A-Z][A-Za-z0-9]*$/;

/** The 4xx answers an operation may give besides its own statuses, each a problem+json. */
const problemResponses = {
  400: 'The input is not valid: the problem names each field (`errors`).',
  401: 'No API key, or one that is not valid.',
  403: 'The API key lacks the permission.',
  404: 'No such resource in the tenant.',
} as const;

const problemResponse = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
});

export interface OpenApiInfo {
  title: string;
  version: string;
  /** The address clients reach the service at (PUBLIC_URL). */
  serverUrl: string;
}

/** An OpenAPI 3.1 document built from the same zod schemas that validate the requests. */
export function buildOpenApiDocument(routes: RouteDefinition[], info: OpenApiInfo) {
  const paths: Record<string, Record<string, unknown>> = {};
  const jsonSchema = (schema: z.ZodType, io: 'input' | 'output') =>
    z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' });
  for (const route of routes) {
    const path = route.path.replace(/:(\w+)/g, '{$1}');
    const parameters: unknown[] = [];
    for (const [location, schema] of [
      ['path', route.params],
      ['query', route.query],
    ] as const) {
      if (!schema) continue;
      for (const [name, field] of Object.entries(schema.shape)) {
        parameters.push({
          name,
          in: location,
          required: location === 'path' || !(field as z.ZodType).safeParse(undefined).success,
          schema: jsonSchema(field as z.ZodType, 'input'),
        });
      }
    }
    const responses: Record<string, unknown> = {};
    for (const [status, response] of Object.entries(route.responses)) {
      responses[status] = {
        description: response.description,
        ...(response.schema
          ? { content: { 'application/json': { schema: jsonSchema(response.schema, 'output') } } }
          : {}),
      };
    }
    // The 4xx answers that can happen to this operation, then any other error.
    // Every operation screens its query (NUL, lone surrogates), so each may answer a 400.
    const errors: (keyof typeof problemResponses)[] = [400];
    if (route.permission) errors.push(401, 403);
    if (route.params) errors.push(404);
    // Each its own object: the route guard's description adds headers per operation.
    for (const status of errors) responses[status] ??= problemResponse(problemResponses[status]);
    responses.default = problemResponse('An error (RFC 9457 problem details).');
    const body = route.body;
    (paths[path] ??= {})[route.method] = {
      operationId: route.operationId,
      summary: route.summary,
      tags: [route.tag],
      ...(route.permission
        ? {
            'x-permission': route.permission,
            security: [{ apiKey: [] }, { sessionBearer: [] }, { sessionCookie: [] }],
          }
        : { security: [] }),
      ...(parameters.length ? { parameters } : {}),
      ...(body
        ? {
            requestBody: {
              required: true,
              content: Object.fromEntries(
                (route.bodyMediaTypes ?? ['application/json']).map((type) => [
                  type,
                  { schema: jsonSchema(body, 'input') },
                ]),
              ),
            },
          }
        : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: info.title,
      version: info.version,
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    servers: [{ url: info.serverUrl }],
    tags: [...new Set(routes.map((route) => route.tag))].map((name) => ({
      name,
      description: `${name} operations.`,
    })),
    paths,
    components: {
      securitySchemes: {
        apiKey: { type: 'apiKey', in: 'header', name: 'SVC-API-KEY' },
        // A member's session (POST /sessions): add SVC-TENANT-ID when the user has several tenants.
        sessionBearer: {
          type: 'http',
          scheme: 'bearer',
          description:
            'A session token from POST /sessions. With several memberships, SVC-TENANT-ID names the tenant.',
        },
        sessionCookie: {
          type: 'apiKey',
          in: 'cookie',
          name: 'tv_session',
          description: "The console's session cookie; unsafe methods must come from the same origin.",
        },
      },
      schemas: {
        Problem: {
          type: 'object',
          required: ['type', 'title', 'status'],
          properties: {
            type: { type: 'string', format: 'uri' },
            title: { type: 'string' },
            status: { type: 'integer' },
            detail: { type: 'string' },
            errors: { type: 'object', additionalProperties: { type: 'array', items: { type: 'string' } } },
            request_id: { type: 'string' },
          },
        },
      },
    },
  };
}
