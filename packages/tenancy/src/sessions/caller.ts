import {
  badRequest,
  forbidden,
  unauthorized,
  type Authenticate,
  type CallerCredentials,
} from '@tokenvault/platform';
import { permissions } from '@tokenvault/contracts';
import { looksLikeApiKey } from '../domain/api-key.ts';
import { looksLikeSessionToken } from './sign-in-links.ts';
import type { Sessions } from './sessions.service.ts';

/** The console's session cookie. */
export const sessionCookieName = 'tv_session';

/** OWNER and ADMIN have "full access to all features": every permission of the spec's list. */
const everyPermission: ReadonlySet<string> = new Set(permissions);

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const safeMethods = new Set(['GET', 'HEAD', 'OPTIONS']);

function header(headers: CallerCredentials['headers'], name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

export function cookieValue(headers: CallerCredentials['headers'], name: string): string | undefined {
  for (const part of (header(headers, 'cookie') ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return undefined;
}

const bearerToken = (authorization: string) => /^Bearer\s+(\S+)\s*$/i.exec(authorization)?.[1];

/** The session a request carries: `Authorization: Bearer …` first, else the console's cookie. */
export function sessionCredential(
  request: CallerCredentials,
): { token: string; from: 'bearer' | 'cookie' } | undefined {
  const authorization = header(request.headers, 'authorization');
  const bearer = authorization && bearerToken(authorization);
  if (bearer) return { token: bearer, from: 'bearer' };
  const cookie = cookieValue(request.headers, sessionCookieName);
  return cookie ? { token: cookie, from: 'cookie' } : undefined;
}

/**
 * Whether an Authorization header (or any of its values) carries one of the service's session
 * tokens: never sent on to a third party, whatever else the header may be.
 */
export function isSessionAuthorization(authorization: string | string[]): boolean {
  return [authorization].flat().some((value) => {
    const bearer = bearerToken(value);
    return bearer !== undefined && looksLikeSessionToken(bearer);
  });
}

/**
 * A cookie goes with every request the browser makes to us, whoever's page asked: an unsafe
 * method on a cookie must come from our own origin (Sec-Fetch-Site, else Origin against the Host
 * or PUBLIC_URL). A request with neither header is refused too. A safe method passes (a link
 * followed to a page of ours), unless a script of another origin sent it (CORS mode, or an
 * Origin that is not ours): cookies never authenticate a cross-origin request, whatever
 * CORS_ALLOWED_ORIGINS lists. Bearer tokens are not affected.
 */
export function checkSameOrigin(request: CallerCredentials, publicUrl: string): void {
  const refused = () =>
    forbidden('A cookie-authenticated request must come from the console itself (cross-origin refused).');
  if (safeMethods.has(request.method.toUpperCase())) {
    if (isScriptOfAnotherOrigin(request, publicUrl)) throw refused();
    return;
  }
  const site = header(request.headers, 'sec-fetch-site');
  if (site !== undefined) {
    if (site === 'same-origin') return;
    throw refused();
  }
  const origin = header(request.headers, 'origin');
  if (!origin) throw refused();
  const host = header(request.headers, 'host');
  let originHost: string;
  try {
    originHost = new URL(origin).host;
  } catch {
    throw refused();
  }
  if (origin === new URL(publicUrl).origin || (host !== undefined && originHost === host)) return;
  throw refused();
}

/** A fetch or XHR from a page of another origin: the browser says so, or its Origin does. */
function isScriptOfAnotherOrigin(request: CallerCredentials, publicUrl: string): boolean {
  const site = header(request.headers, 'sec-fetch-site');
  if (header(request.headers, 'sec-fetch-mode') === 'cors' && site !== undefined && site !== 'same-origin') {
    return true;
  }
  const origin = header(request.headers, 'origin');
  if (origin === undefined || origin === new URL(publicUrl).origin) return false;
  const host = header(request.headers, 'host');
  return !URL.canParse(origin) || host === undefined || new URL(origin).host !== host;
}

/**
 * SVC-API-KEY, or a member's session (bearer or cookie) with SVC-TENANT-ID when the user is a
 * member of several tenants. With an API key, the request's `Authorization` and cookies are not
 * the service's and are not read (the proxy sends a processor's own `Authorization: Bearer …` on
 * to it); without one, a bearer is read as a session. A session acts as the user (actor_type
 * `user`) with every permission: OWNER and ADMIN both have full access. The session and its
 * membership are read on every request (one query), so a sign-out, a member's removal or a
 * tenant's deletion ends access at the next request in every gateway process.
 */
export function createCallerAuthenticator(options: {
  apiKeys: Authenticate;
  sessions: Sessions;
  publicUrl: string;
}): Authenticate {
  const { apiKeys, sessions } = options;
  return async (apiKey, request) => {
    const credential = apiKey === undefined && request ? sessionCredential(request) : undefined;
    if (!request || !credential) return apiKeys(apiKey, request);
    if (credential.from === 'bearer' && looksLikeApiKey(credential.token)) {
      // Read as a session, a key would be told to sign in again: name where it goes instead.
      throw unauthorized(
        'An API key goes in the SVC-API-KEY header (or BT-API-KEY), not in Authorization: send SVC-API-KEY: tv_….',
        { errors: { 'headers.authorization': ['Send the API key as SVC-API-KEY instead'] } },
      );
    }
    if (!looksLikeSessionToken(credential.token)) {
      throw unauthorized('The session has ended or is not valid: sign in again.');
    }
    if (credential.from === 'cookie') checkSameOrigin(request, options.publicUrl);
    const tenantHeader = header(request.headers, 'svc-tenant-id');
    if (tenantHeader !== undefined && !uuidPattern.test(tenantHeader)) {
      throw badRequest('SVC-TENANT-ID must be a tenant id (UUID).', {
        'headers.svc-tenant-id': ['Must be a UUID'],
      });
    }
    const { session, memberships } = await sessions.resolve(credential.token, tenantHeader);
    if (memberships.length === 0) {
      throw forbidden(
        tenantHeader === undefined
          ? 'This user is not a member of any tenant.'
          : 'This user is not a member of the tenant in SVC-TENANT-ID.',
      );
    }
    if (memberships.length > 1) {
      throw badRequest('This user is a member of several tenants: name one in SVC-TENANT-ID.', {
        'headers.svc-tenant-id': ['Required'],
      });
    }
    const membership = memberships[0]!;
    return {
      tenantId: membership.tenantId,
      actorId: session.userId,
      actorType: 'user',
      permissions: everyPermission,
      rules: [],
      tenantSettings: membership.settings,
    };
  };
}
