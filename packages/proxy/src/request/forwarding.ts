// What a proxied request becomes on its way to the destination, and what the destination's answer
// becomes on its way back: pure functions of headers, URLs and bodies.
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import { badRequest } from '@tokenvault/platform';
import {
  findTokenIds,
  jsonPointer,
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
 * The caller's headers the destination gets: all but the service's own (`svc-api-key`,
 * `svc-proxy-*`), hop-by-hop ones, `host` (the destination's own is sent), `content-length` (the
 * rendered body has its own) and `accept-encoding` (the service reads the answer: it asks for it
 * unencoded).
 */
export function forwardedRequestHeaders(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const listed = connectionListed(headers);
  const forwarded: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    if (name === 'svc-api-key' || name.startsWith('svc-proxy-')) continue;
    if (hopByHop.has(name) || listed.has(name)) continue;
    if (name === 'host' || name === 'content-length' || name === 'accept-encoding') continue;
    forwarded[name] = value;
  }
  return forwarded;
}

/** The destination's headers the caller gets: all but hop-by-hop ones and content-length. */
export function returnedResponseHeaders(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const listed = connectionListed(headers);
  const returned: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || hopByHop.has(name) || listed.has(name) || name === 'content-length') continue;
    returned[name] = value;
  }
  return returned;
}

/**
 * The destination URL: the base, then the path after `/proxy` appended to its path, then the
 * base's query and the request's (less `svc-proxy-key`). A base that is not an absolute URL is a
 * 400 naming `field`.
 */
export function destinationUrl(base: string, subPath: string, search: string, field: string): URL {
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    throw badRequest('The destination URL is not valid.', { [field]: ['Must be an absolute URL'] });
  }
  if (subPath && subPath !== '/') url.pathname = url.pathname.replace(/\/$/, '') + subPath;
  const query = new URLSearchParams(search);
  query.delete('svc-proxy-key');
  for (const [name, value] of query) url.searchParams.append(name, value);
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
 * (errors named by JSON pointer), form values (named by their field) and text (named `body`).
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
    if (request.kind === 'json') body = renderJson(body, tokens, jsonPointer);
    else if (request.kind === 'form') {
      body = (body as [string, string][]).map(([name, value]) => [name, renderText(value, tokens, name)]);
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
