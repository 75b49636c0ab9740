// What a proxied request becomes on its way to the destination, and what the destination's answer
// becomes on its way back: pure functions of headers, URLs and bodies.
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import { badRequest } from '@tokenvault/platform';
import { isSessionAuthorization } from '@tokenvault/tenancy';
import {
  findTokenIds,
  fieldUnder,
  renderJson,
  renderText,
  stringsIn,
  type OpenedTokens,
} from '@tokenvault/expressions';

/** RFC 9110 §7.6.1 hop-by-hop headers (and the pre-standard ones clients still send). */
const hopByHop = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** Headers named by a Connection header are hop-by-hop too. */
function connectionListed(headers: IncomingHttpHeaders): Set<string> {
  const listed = headers.connection;
  return new Set(
    (listed ?? '')
      .split(',')
      .map((name) => name.trim().toLowerCase())
      .filter(Boolean),
  );
}

/**
 * The caller's headers the destination gets: all but the service's credentials (every `svc-*`
 * header: API key, proxy key and URL, tenant, idempotency key; an `Authorization` that carries one
 * of the service's sessions), the caller's cookies (a browser sends the service's own with every
 * request to its origin), hop-by-hop ones, `host` (the destination's own is sent),
 * `content-length` (the rendered body has its own) and `accept-encoding` (the service reads the
 * answer: it asks for it unencoded). Any other `Authorization` is the destination's (a processor's
 * secret key) and passes as it came.
 */
export function forwardedRequestHeaders(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const listed = connectionListed(headers);
  const forwarded: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    // bt-* names were renamed to svc-* on the way in; dropped here all the same.
    if (name.startsWith('svc-') || name.startsWith('bt-') || name === 'cookie') continue;
    if (name === 'authorization' && isSessionAuthorization(value)) continue;
    if (hopByHop.has(name) || listed.has(name)) continue;
    if (name === 'host' || name === 'content-length' || name === 'accept-encoding') continue;
    forwarded[name] = value;
  }
  return forwarded;
}

/**
 * What a destination (or a response stage) never sets on the service's origin, which the
 * console shares: cookies and site data, transport and reporting policies that would outlive the
 * answer (HSTS, Alt-Svc, NEL and reporting endpoints, which would send later requests' URLs to
 * the destination), service workers, and CORS (the service's own policy decides cross-origin
 * reads). The answer's CSP and nosniff are the proxy's own (`inertAnswerHeaders`).
 */
const neverReturned = new Set([
  'set-cookie',
  'set-cookie2',
  'clear-site-data',
  'strict-transport-security',
  'alt-svc',
  'nel',
  'report-to',
  'reporting-endpoints',
  'content-security-policy',
  'content-security-policy-report-only',
  'x-content-type-options',
  'service-worker-allowed',
]);

/**
 * Every proxied answer is inert in a browser: a sandboxed document (no script, no plugin, no form,
 * an origin of its own) that loads nothing and is framed nowhere, its type never sniffed. A link
 * to `/proxy?svc-proxy-key=…` opened by a signed-in member cannot act on the service's origin.
 */
export const inertAnswerHeaders = {
  'content-security-policy': "sandbox; default-src 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
} as const;

/**
 * The headers of the answer the caller gets, from the destination's (or a response stage's): all
 * but hop-by-hop ones, content-length and those never returned, and the inert answer's own.
 */
export function returnedResponseHeaders(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const listed = connectionListed(headers);
  const returned: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || hopByHop.has(name) || listed.has(name) || name === 'content-length') continue;
    if (neverReturned.has(name) || name.startsWith('access-control-')) continue;
    returned[name] = value;
  }
  return { ...returned, ...inertAnswerHeaders };
}

/**
 * A path segment that a URL parser or the destination's server may resolve as `.` or `..`: dots
 * raw or percent-encoded, between `/`, `\\`, `%2f` or `%5c` (some servers decode them into
 * separators), and `..;…` (servlet containers read `;` as the start of path parameters).
 */
function hasDotSegment(path: string): boolean {
  return path
    .replace(/%2e/gi, '.')
    .split(/\/|\\|%2f|%5c/i)
    .some((segment) => {
      const name = segment.split(';')[0];
      return name === '.' || name === '..';
    });
}

const leavesBase = () =>
  badRequest('The path after /proxy may not leave the destination’s path.', {
    path: [
      'Must not contain . or .. segments (raw, percent-encoded, or between \\, %2f or %5c): name the resource under the destination URL’s path',
    ],
  });

/** The query parameters that carry the proxy's key (the service's name and Basis Theory's). */
const proxyKeyParameters = new Set(['svc-proxy-key', 'bt-proxy-key']);

/** A path equal to the base's, or under it. */
const isUnder = (path: string, base: string) => {
  const prefix = base.replace(/\/$/, '');
  return path === prefix || path.startsWith(`${prefix}/`) || prefix === '';
};

/**
 * The destination URL: the base, then the path after `/proxy` appended to its path, then the
 * base's query and the request's (less `svc-proxy-key` and `bt-proxy-key`, in any case). A base that is not an
 * absolute URL is a 400 naming `field`; a path that could leave the base's (a dot segment in any
 * form) a 400 naming `path`, and the URL built is checked to be under the base's path all the
 * same.
 */
export function destinationUrl(base: string, subPath: string, search: string, field: string): URL {
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    throw badRequest('The destination URL is not valid.', { [field]: ['Must be an absolute URL'] });
  }
  if (hasDotSegment(subPath)) throw leavesBase();
  const basePath = url.pathname;
  if (subPath && subPath !== '/') url.pathname = basePath.replace(/\/$/, '') + subPath;
  if (!isUnder(url.pathname, basePath)) throw leavesBase();
  for (const [name, value] of new URLSearchParams(search)) {
    if (!proxyKeyParameters.has(name.toLowerCase())) url.searchParams.append(name, value);
  }
  return url;
}

export type BodyKind = 'json' | 'form' | 'text' | 'bytes';

/** JSON, form-encoded and text (text/*, XML) bodies are detokenized; others pass as bytes. */
export function bodyKindOf(contentType: string | undefined): BodyKind {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (type === 'application/json' || /^application\/[^/]+\+json$/.test(type)) return 'json';
  if (type === 'application/x-www-form-urlencoded') return 'form';
  if (type.startsWith('text/') || type === 'application/xml' || /^application\/[^/]+\+xml$/.test(type))
    return 'text';
  return 'bytes';
}

/** A request as the proxy reads it: headers to forward and a body of one kind. */
export interface ProxiedRequest {
  headers: Record<string, string | string[]>;
  kind: BodyKind;
  /** JSON: the parsed value; form: the decoded pairs; text: the text; bytes: the bytes. */
  body: unknown;
}

function formPairs(body: Buffer): [string, string][] {
  return [...new URLSearchParams(body.toString('utf8'))];
}

/** Reads a raw body by its kind (JSON arrives already parsed). */
export function decodeBody(kind: BodyKind, raw: Buffer | undefined, parsedJson: unknown): unknown {
  if (kind === 'json') return parsedJson;
  if (raw === undefined || raw.length === 0) return undefined;
  if (kind === 'form') return formPairs(raw);
  if (kind === 'text') return raw.toString('utf8');
  return raw;
}

function* headerTexts(headers: Record<string, string | string[]>): Generator<string> {
  for (const value of Object.values(headers)) {
    if (Array.isArray(value)) yield* value;
    else yield value;
  }
}

function* bodyTexts(request: ProxiedRequest): Generator<string> {
  if (request.body === undefined) return;
  if (request.kind === 'json') yield* stringsIn(request.body);
  else if (request.kind === 'form') for (const [, value] of request.body as [string, string][]) yield value;
  else if (request.kind === 'text') yield request.body as string;
}

/** The distinct tokens the request's headers and body name (at most 100: a 400). */
export const requestTokenIds = (request: ProxiedRequest): string[] =>
  findTokenIds([...headerTexts(request.headers), ...bodyTexts(request)], 'request');

/**
 * The request with every expression rendered: header values (errors named by header), JSON
 * (errors named by dotted field, `body.card.number`), form values (`body.<name>`) and text (`body`).
 */
export function renderRequest(request: ProxiedRequest, tokens: OpenedTokens): ProxiedRequest {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    headers[name] = Array.isArray(value)
      ? value.map((item) => renderText(item, tokens, name))
      : renderText(value, tokens, name);
  }
  let body = request.body;
  if (body !== undefined) {
    if (request.kind === 'json') body = renderJson(body, tokens, fieldUnder('body'));
    else if (request.kind === 'form') {
      body = (body as [string, string][]).map(([name, value]) => [
        name,
        renderText(value, tokens, `body.${name}`),
      ]);
    } else if (request.kind === 'text') body = renderText(body as string, tokens, 'body');
  }
  return { ...request, headers, body };
}

/** The bytes sent for a body of its kind. */
export function encodeBody(kind: BodyKind, body: unknown): Buffer | undefined {
  if (body === undefined) return undefined;
  if (kind === 'json') return Buffer.from(JSON.stringify(body));
  if (kind === 'form') return Buffer.from(new URLSearchParams(body as [string, string][]).toString());
  if (kind === 'text') return Buffer.from(body as string);
  return body as Buffer;
}
