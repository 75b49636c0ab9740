import { randomUUID } from 'node:crypto';
import { parse as parseQueryString } from 'node:querystring';
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { corsPolicy } from './cors.ts';
import {
  asProblem,
  badRequest,
  internalError,
  notFound,
  payloadTooLarge,
  problemOfStatus,
  unsupportedMediaType,
  type Problem,
} from './errors.ts';
import type { Logger } from './logger.ts';
import { tenantCodeOrigin } from './tenant-code-errors.ts';
import { httpMetrics } from './metrics.ts';
import { incomingRequestId } from './request-id.ts';
import type { Authenticate, Principal, RouteDefinition } from './route.ts';
import { callRoute } from './route-call.ts';
import type { RouteGuard } from './route-guard.ts';
import { adoptCompatibilityHeaders } from './wire-names.ts';

// The express application: its shell (request ids, logging, JSON parsing), the routes mounted on
// it, and the central error handler that answers every error as problem+json.

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
      // The JSON parser reads an empty body as {}: a route that takes a body refuses it instead
      // (one whose body may be left out is called without any, and no Content-Type).
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
            // The socket's address, or what trusted proxies forwarded (AppOptions.trustProxy).
            ...(req.ip ? { clientAddress: req.ip } : {}),
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
  /**
   * Proxies whose X-Forwarded-For is believed for req.ip (TRUST_PROXY): false for none, a hop
   * count, or their IPs/CIDRs.
   */
  trustProxy?: false | number | string[];
  /** Origins whose pages may call the API with an API key (CORS_ALLOWED_ORIGINS). */
  corsAllowedOrigins?: readonly string[];
  /** Mounted before the routes: health checks and documents. */
  configure(app: express.Express): void;
}

/** The policy of every answer that is not a page of its own: nothing in it may load or run. */
const inertPolicy = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/** The express application shell: request ids, logging, JSON parsing, the central error handler. */
export function createHttpApp(options: AppOptions): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('trust proxy', options.trustProxy ?? false);
  // Every value is kept (no silent cut at 1,000 pairs): the request line is already bounded by
  // Node's header size limit, and repeatable() bounds each parameter with a 400.
  app.set('query parser', (query: string) => parseQueryString(query, '&', '=', { maxKeys: 0 }));
  app.use((req, res, next) => {
    // First, so that BT-TRACE-ID is a request id and no later step sees a BT-* name.
    const twoNames = adoptCompatibilityHeaders(req.headers);
    req.requestId = incomingRequestId(req) ?? randomUUID();
    res.setHeader('x-request-id', req.requestId);
    // Every response is private to a tenant (some carry token data): no cache may keep one.
    res.setHeader('cache-control', 'no-store');
    // The API shares its origin with the console: an answer opened as a page (JSON echoing a
    // caller's strings, say) must stay inert there. Pages that run script set their own policy.
    res.setHeader('content-security-policy', inertPolicy);
    res.setHeader('x-content-type-options', 'nosniff');
    next(twoNames);
  });
  app.use(corsPolicy(options.corsAllowedOrigins ?? []));
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
    if (problem.status >= 500) {
      // Tenant code's failure is the tenant's, not the service's: a warning, by its id and class only
      // (the logger's serializer keeps its text out: it can quote the data the code was given).
      if (tenantCodeOrigin(error))
        logger.warn({ err: error, requestId: req.requestId }, 'tenant code failed');
      else logger.error({ err: error, requestId: req.requestId }, 'request failed');
    }
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

/**
 * A Problem as it is, a decider's DomainError mapped (problemOf), anything else by what raised
 * it. Never copies an error's message into the problem: it can quote the input.
 */
function toProblem(error: unknown): Problem {
  const problem = asProblem(error);
  if (problem) return problem;
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
      return unsupportedMediaType('Content-Encoding must be identity, gzip, deflate or br.');
    case 'charset.unsupported':
      return unsupportedMediaType('Use UTF-8 JSON.');
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
  return internalError();
}
