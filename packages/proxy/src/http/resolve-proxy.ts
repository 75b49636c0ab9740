import type { Request, Response } from 'express';
import {
  badRequest,
  forbidden,
  holdsPermission,
  unauthorized,
  type Authenticate,
  type Principal,
} from '@tokenvault/platform';
import type { ConfiguredProxy } from '../queries/configured-proxy.queries.ts';
import { destinationUrl } from '../request/forwarding.ts';

/** The header naming an ephemeral proxy's destination. */
export const proxyUrlHeader = 'SVC-PROXY-URL';
/** The header (or, lower-case, the query parameter) naming a pre-configured proxy by its key. */
export const proxyKeyHeader = 'SVC-PROXY-KEY';
export const proxyKeyParameter = 'svc-proxy-key';
/** Basis Theory's name of the parameter, accepted too (its header is renamed on the way in). */
export const compatibilityProxyKeyParameter = 'bt-proxy-key';

export interface ResolveProxyDeps {
  authenticate: Authenticate;
  /** What every API-key call passes before it runs (the key's rate limit). */
  admit?: (principal: Principal, res: Response) => Promise<void>;
  /** What a call without an API key passes (a `require_auth: false` proxy's own rate limit). */
  admitKeyless?: (proxy: ConfiguredProxy, res: Response) => Promise<void>;
  /** The pre-configured proxy a key invokes (undefined: none). */
  proxyByKey: (key: string) => Promise<ConfiguredProxy | undefined>;
  /** PROXY_TIMEOUT_MS: a proxy's own timeout may lower it, never raise it. */
  timeoutMs: number;
}

/** Which destination an invocation goes to, and as whom. */
export interface ProxyInvocation {
  url: URL;
  /** Where a refused destination is reported. */
  urlField: string;
  /**
   * The caller's API key, whose token:use renders the expressions; absent for a pre-configured
   * proxy without auth (anyone with its key), whose call detokenizes nothing.
   */
  principal?: Principal;
  timeoutMs: number;
  /** The pre-configured proxy invoked, when it is one. */
  proxy?: ConfiguredProxy;
}

/**
 * The caller's API key, which must hold proxy:invoke (or token:use, which Basis Theory accepts).
 * Only an API key: a member's session never acts through /proxy, since a browser sends its cookie
 * with any request to the service's origin, a link to /proxy that another tenant sent included.
 * Without SVC-API-KEY, the request's `Authorization` and cookies are not read at all.
 */
async function invoker(req: Request, res: Response, deps: ResolveProxyDeps): Promise<Principal> {
  const apiKey = req.get('svc-api-key');
  if (!apiKey) throw unauthorized('/proxy takes an API key (SVC-API-KEY), not a member’s session.');
  const principal = await deps.authenticate(apiKey);
  await deps.admit?.(principal, res);
  if (!holdsPermission(principal, 'proxy:invoke') && !holdsPermission(principal, 'token:use')) {
    throw forbidden('This API key lacks proxy:invoke.');
  }
  return principal;
}

const keyOf = (req: Request): string | undefined => {
  const header = req.get(proxyKeyHeader);
  if (header) return header;
  const text = (value: unknown) => (typeof value === 'string' && value ? value : undefined);
  const own = text(req.query[proxyKeyParameter]);
  const compatibility = text(req.query[compatibilityProxyKeyParameter]);
  if (own !== undefined && compatibility !== undefined && own !== compatibility) {
    throw badRequest('The proxy key is given under two names with different values.', {
      [`query.${compatibilityProxyKeyParameter}`]: [
        `Differs from ${proxyKeyParameter}: send one of the two names, or the same value in both`,
      ],
    });
  }
  return own ?? compatibility;
};

/**
 * A pre-configured proxy (its key in `SVC-PROXY-KEY` or `svc-proxy-key`) or an ephemeral one
 * (`SVC-PROXY-URL`): the destination (the path and query after /proxy appended, less the key
 * parameter) and the principal. An unknown key, or another tenant's proxy, is a 401: its
 * existence is never told.
 */
export async function resolveProxy(
  req: Request,
  res: Response,
  deps: ResolveProxyDeps,
): Promise<ProxyInvocation> {
  const search = req.originalUrl.includes('?') ? req.originalUrl.slice(req.originalUrl.indexOf('?')) : '';
  const key = keyOf(req);
  if (key === undefined) {
    const principal = await invoker(req, res, deps);
    const base = req.get(proxyUrlHeader);
    if (!base) throw badRequest('Say where to send the request.', { [proxyUrlHeader]: ['Required'] });
    return {
      url: destinationUrl(base, req.path, search, proxyUrlHeader),
      urlField: proxyUrlHeader,
      principal,
      timeoutMs: deps.timeoutMs,
    };
  }
  const invalidKey = () => unauthorized(`No proxy has this ${proxyKeyHeader}.`);
  const proxy = await deps.proxyByKey(key);
  if (!proxy) throw invalidKey();
  const timeoutMs = Math.min(deps.timeoutMs, proxy.timeout ?? Infinity);
  const url = destinationUrl(proxy.destination, req.path, search, 'destination_url');
  if (!proxy.require_auth) {
    await deps.admitKeyless?.(proxy, res);
    return { url, urlField: 'destination_url', timeoutMs, proxy };
  }
  const principal = await invoker(req, res, deps);
  if (principal.tenantId !== proxy.tenant_id) throw invalidKey();
  return { url, urlField: 'destination_url', principal, timeoutMs, proxy };
}
