import { readFileSync } from 'node:fs';
import { rootCertificates } from 'node:tls';
import type { Request, Response } from 'express';
import {
  badRequest,
  forbidden,
  holdsPermission,
  payloadTooLarge,
  type Authenticate,
  type Config,
  type Principal,
} from '@tokenvault/platform';
import type { Detokenizer } from '@tokenvault/tokens';
import { AddressAllowlist } from '../destination/addresses.ts';
import { resolveDestination, systemResolver, type Resolver } from '../destination/resolve.ts';
import { sendToDestination, type DestinationResponse, type SendLimits } from '../destination/send.ts';
import {
  bodyKindOf,
  decodeBody,
  destinationUrl,
  encodeBody,
  forwardedRequestHeaders,
  renderRequest,
  requestTokenIds,
  returnedResponseHeaders,
  type ProxiedRequest,
} from '../request/forwarding.ts';
import type { ProxyPipeline, StagedProxy } from '../pipeline/pipeline.ts';

export type ProxyConfig = Pick<
  Config,
  | 'PROXY_ALLOWED_PRIVATE_ADDRESSES'
  | 'PROXY_TIMEOUT_MS'
  | 'PROXY_MAX_REQUEST_BYTES'
  | 'PROXY_MAX_RESPONSE_BYTES'
  | 'PROXY_CA_FILE'
>;

export interface ProxyGatewayDeps {
  config: ProxyConfig;
  authenticate: Authenticate;
  detokenizer: Detokenizer;
  /** A configured proxy's request and response stages (reactors, code transforms). */
  pipeline: ProxyPipeline;
  /** How destination names are resolved (tests give their own). */
  resolver?: Resolver;
  /** What every API-key call passes before it runs (the key's rate limit). */
  admit?: (principal: Principal, res: Response) => Promise<void>;
}

export const proxyMethods = ['get', 'post', 'put', 'patch', 'delete'] as const;

/** The header naming an ephemeral proxy's destination. */
export const proxyUrlHeader = 'SVC-PROXY-URL';

/** A raw body, at most `max` bytes (past it a 413, and nothing is sent anywhere). */
async function readRaw(req: Request, max: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > max) throw payloadTooLarge(`The request body exceeds ${max} bytes.`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/**
 * `/proxy/**`: a request detokenized in flight and sent on to a third party, whose answer comes
 * back as it came. Mounted as express middleware (not a JSON route): the bodies are the caller's
 * and the destination's, in any media type.
 */
export class ProxyGateway {
  private readonly deps: ProxyGatewayDeps;
  private readonly allowlist: AddressAllowlist;
  private readonly limits: SendLimits;

  constructor(deps: ProxyGatewayDeps) {
    this.deps = deps;
    this.allowlist = new AddressAllowlist(deps.config.PROXY_ALLOWED_PRIVATE_ADDRESSES);
    this.limits = {
      timeoutMs: deps.config.PROXY_TIMEOUT_MS,
      maxResponseBytes: deps.config.PROXY_MAX_RESPONSE_BYTES,
      ...(deps.config.PROXY_CA_FILE
        ? { ca: [...rootCertificates, readFileSync(deps.config.PROXY_CA_FILE, 'utf8')] }
        : {}),
    };
  }

  /** Express middleware for `app.use('/proxy', …)`. */
  readonly handle = async (req: Request, res: Response, next: () => void): Promise<void> => {
    if (!(proxyMethods as readonly string[]).includes(req.method.toLowerCase())) return next();
    const principal = await this.deps.authenticate(req.get('svc-api-key') ?? undefined, {
      method: req.method,
      headers: req.headers,
    });
    await this.deps.admit?.(principal, res);
    if (!holdsPermission(principal, 'proxy:invoke') && !holdsPermission(principal, 'token:use')) {
      throw forbidden('This API key lacks proxy:invoke.');
    }
    const base = req.get(proxyUrlHeader);
    if (!base) throw badRequest('Say where to send the request.', { [proxyUrlHeader]: ['Required'] });
    const search = req.originalUrl.includes('?') ? req.originalUrl.slice(req.originalUrl.indexOf('?')) : '';
    const url = destinationUrl(base, req.path, search, proxyUrlHeader);
    const answer = await this.forward(principal, req, url, proxyUrlHeader);
    this.reply(res, answer);
  };

  /**
   * The rules in order, each before anything is sent: the body read (413 past its cap), the
   * expressions found (at most 100), the tokens opened (400 unknown, 403 without token:use on a
   * container), every expression rendered (400 naming its place), the destination checked
   * (400); then one request, and its whole answer.
   */
  private async forward(
    principal: Principal,
    req: Request,
    url: URL,
    urlField: string,
    staged?: StagedProxy,
  ): Promise<DestinationResponse> {
    const kind = bodyKindOf(req.get('content-type'));
    const raw = kind === 'json' ? undefined : await readRaw(req, this.deps.config.PROXY_MAX_REQUEST_BYTES);
    const parsed = kind === 'json' && !req.blankJsonBody ? (req.body as unknown) : undefined;
    const request: ProxiedRequest = {
      headers: forwardedRequestHeaders(req.headers),
      kind,
      body: decodeBody(kind, raw, parsed),
    };
    const ids = requestTokenIds(request);
    const opened = ids.length
      ? await this.deps.detokenizer.openTokens(principal, ids, 'token:use', req.requestId, 'request')
      : { data: new Map<string, unknown>(), tokens: new Map<string, unknown>() };
    const stages = staged && { proxy: staged, caller: principal, requestId: req.requestId };
    const detokenized = renderRequest(request, opened);
    const rendered = stages ? await this.deps.pipeline.runRequestStage(stages, detokenized) : detokenized;
    const destination = await resolveDestination(
      url,
      { allowlist: this.allowlist, resolver: this.deps.resolver ?? systemResolver },
      urlField,
    );
    const answer = await sendToDestination(
      destination,
      { method: req.method, headers: rendered.headers, body: encodeBody(rendered.kind, rendered.body) },
      this.limits,
    );
    return stages ? this.deps.pipeline.runResponseStage(stages, answer) : answer;
  }

  private reply(res: Response, answer: DestinationResponse): void {
    res.status(answer.status);
    for (const [name, value] of Object.entries(returnedResponseHeaders(answer.headers))) {
      if (value !== undefined) res.setHeader(name, value);
    }
    res.setHeader('content-length', answer.body.length);
    res.end(answer.body);
  }
}
