import { readFileSync } from 'node:fs';
import { rootCertificates } from 'node:tls';
import type { Request, Response } from 'express';
import {
  badRequest,
  payloadTooLarge,
  type Authenticate,
  type Config,
  type Principal,
} from '@tokenvault/platform';
import type { Detokenizer } from '@tokenvault/tokens';
import {
  type AddressAllowlist,
  resolveDestination,
  systemResolver,
  type Resolver,
  DestinationConnections,
  sendToDestination,
  type DestinationResponse,
  type SendLimits,
} from '@tokenvault/destinations';
import {
  bodyKindOf,
  decodeBody,
  encodeBody,
  forwardedRequestHeaders,
  renderRequest,
  requestTokenIds,
  returnedResponseHeaders,
  type ProxiedRequest,
} from '../request/forwarding.ts';
import type { ConfiguredProxy } from '../queries/configured-proxy.queries.ts';
import type { ProxyPipeline } from '../pipeline/stage-pipeline.ts';
import { resolveProxy, type ProxyInvocation } from './resolve-proxy.ts';

export type ProxyConfig = Pick<
  Config,
  'PROXY_TIMEOUT_MS' | 'PROXY_MAX_REQUEST_BYTES' | 'PROXY_MAX_RESPONSE_BYTES' | 'PROXY_CA_FILE'
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
  /** What a call without an API key passes (a `require_auth: false` proxy's own rate limit). */
  admitKeyless?: (proxy: ConfiguredProxy, res: Response) => Promise<void>;
  /** The pre-configured proxy a key invokes (undefined: none). */
  proxyByKey: (key: string) => Promise<ConfiguredProxy | undefined>;
  /** The process's private addresses a destination may have (the proxy routes check with it too). */
  allowlist: AddressAllowlist;
}

export const proxyMethods = ['get', 'post', 'put', 'patch', 'delete'] as const;

/**
 * What a browser says it loads (`Sec-Fetch-Dest`) when the answer would run or style a page: the
 * console's CSP trusts scripts and styles of its own origin, which /proxy shares, and any tenant
 * decides what its proxy answers. Servers and `fetch` send none of these.
 */
const activeSubresources = new Set([
  'script',
  'style',
  'worker',
  'sharedworker',
  'serviceworker',
  'audioworklet',
  'paintworklet',
  'xslt',
]);

function refuseActiveSubresource(req: Request): void {
  if (!activeSubresources.has(req.get('sec-fetch-dest') ?? '')) return;
  throw badRequest('A proxied answer is never a script, style or worker of a page.', {
    'Sec-Fetch-Dest': ['Call /proxy from a server or with fetch, not from a <script>, <link> or worker'],
  });
}

export { proxyUrlHeader } from './resolve-proxy.ts';

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
 * back with its status and body, and its headers less those that would act on the service's
 * origin (`returnedResponseHeaders`: no cookie, no CORS, an inert CSP). Mounted as express
 * middleware (not a JSON route): the bodies are the caller's and the destination's, in any media
 * type.
 */
export class ProxyGateway {
  private readonly deps: ProxyGatewayDeps;
  private readonly allowlist: AddressAllowlist;
  private readonly limits: SendLimits;
  // Idle connections close after 4 s (or sooner, as the destination's Keep-Alive header says):
  // before the 5 s many servers keep them, so a request rarely meets one the server just closed.
  private readonly connections = new DestinationConnections({
    maxPools: 512,
    maxIdleSocketsPerPool: 16,
    idleTimeoutMs: 4_000,
  });

  constructor(deps: ProxyGatewayDeps) {
    this.deps = deps;
    this.allowlist = deps.allowlist;
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
    refuseActiveSubresource(req);
    const invocation = await resolveProxy(req, res, { ...this.deps, timeoutMs: this.limits.timeoutMs });
    const answer = await this.forward(invocation, req);
    this.reply(res, answer);
  };

  /**
   * The rules in order, each before anything is sent: the body read (413 past its cap), the
   * expressions found (at most 100), the tokens opened (400 unknown, 403 without token:use on a
   * container), every expression rendered (400 naming its place), the destination checked
   * (400); then one request, and its whole answer. A call without auth detokenizes nothing: its
   * expressions are sent as they are.
   */
  private async forward(invocation: ProxyInvocation, req: Request): Promise<DestinationResponse> {
    const { principal, url, urlField } = invocation;
    const kind = bodyKindOf(req.get('content-type'));
    const raw = kind === 'json' ? undefined : await readRaw(req, this.deps.config.PROXY_MAX_REQUEST_BYTES);
    const parsed = kind === 'json' && !req.blankJsonBody ? (req.body as unknown) : undefined;
    const request: ProxiedRequest = {
      headers: forwardedRequestHeaders(req.headers),
      kind,
      body: decodeBody(kind, raw, parsed),
    };
    const ids = principal ? requestTokenIds(request) : [];
    const opened =
      principal && ids.length
        ? await this.deps.detokenizer.openTokens(principal, ids, 'token:use', req.requestId, 'request')
        : { data: new Map<string, unknown>(), tokens: new Map<string, unknown>() };
    const detokenized = principal ? renderRequest(request, opened) : request;
    // A pre-configured proxy's reactors and code transforms: on what is sent, then on the answer.
    const stages = invocation.proxy && {
      proxy: invocation.proxy,
      ...(principal ? { caller: principal } : {}),
      requestId: req.requestId,
    };
    const rendered = stages ? await this.deps.pipeline.runRequestStage(stages, detokenized) : detokenized;
    const destination = await resolveDestination(
      url,
      { allowlist: this.allowlist, resolver: this.deps.resolver ?? systemResolver },
      urlField,
    );
    // The caller's tenant, or the keyless proxy's: connections are never shared across tenants.
    const tenantId = principal?.tenantId ?? invocation.proxy!.tenant_id;
    const answer = await sendToDestination(
      destination,
      // A stage may change the body's kind (a reactor answering JSON to a form, say).
      { method: req.method, headers: rendered.headers, body: encodeBody(rendered.kind, rendered.body) },
      { ...this.limits, timeoutMs: invocation.timeoutMs },
      this.connections.poolFor(tenantId, destination),
    );
    return stages ? this.deps.pipeline.runResponseStage(stages, answer) : answer;
  }

  /** Closes the kept connections to destinations. */
  close(): void {
    this.connections.close();
  }

  /** The destination's answer, or the response stages' (their headers pass the same rules). */
  private reply(res: Response, answer: DestinationResponse): void {
    res.status(answer.status);
    for (const [name, value] of Object.entries(returnedResponseHeaders(answer.headers))) {
      if (value !== undefined) res.setHeader(name, value);
    }
    res.setHeader('content-length', answer.body.length);
    res.end(answer.body);
  }
}
