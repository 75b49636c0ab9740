import { z } from 'zod';
import { defineRoute, unauthorized, type Logger, type RouteDefinition } from '@tokenvault/platform';
import {
  createdSessionSchema,
  createSessionBody,
  currentSessionSchema,
  signInEmailBody,
} from '@tokenvault/contracts';
import { checkSameOrigin, cookieValue, sessionCookieName, sessionCredential } from '../sessions/caller.ts';
import type { Sessions } from '../sessions/sessions.service.ts';
import { looksLikeBrowserNonce, looksLikeSessionToken, newBrowserNonce } from '../sessions/sign-in-links.ts';

/** The nonce cookie that binds sign-in links to the browser that asked for them. */
export const signInCookieName = 'tv_sign_in';

export interface SessionRouteDeps {
  sessions: Sessions;
  publicUrl: string;
  absoluteTimeoutMs: number;
  /** Counts one sign-in e-mail request of this address and client; throws 429 past a cap. */
  takeSignInAllowance(email: string, clientAddress: string | undefined): Promise<void>;
  /** Queues the sign-in e-mail of a link (the worker sends it). */
  enqueueSignInMail(linkId: string): Promise<void>;
  logger: Logger;
}

/** Routes about the session itself: sign-in, who am I, sign-out. None takes an API key. */
export function sessionRoutes(deps: SessionRouteDeps): RouteDefinition[] {
  const { sessions } = deps;
  const tag = 'Sessions';
  const secure = deps.publicUrl.startsWith('https:');
  const cookie = (value: string, maxAgeSeconds: number) =>
    `${sessionCookieName}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${secure ? '; Secure' : ''}`;
  // SameSite=Lax: the console's own requests carry it, another site's POST never does.
  const signInCookie = (nonce: string) =>
    `${signInCookieName}=${nonce}; Path=/sessions; HttpOnly; SameSite=Lax; Max-Age=${Math.floor(sessions.linkTtlMs / 1000)}${secure ? '; Secure' : ''}`;
  const browserNonceOf = (headers: Parameters<typeof cookieValue>[0]) => {
    const value = cookieValue(headers, signInCookieName);
    return value !== undefined && looksLikeBrowserNonce(value) ? value : undefined;
  };

  /** The session of the request (bearer or cookie; a cookie's unsafe request only from our origin). */
  async function current(
    context: { headers: Parameters<typeof sessionCredential>[0]['headers'] },
    method: string,
  ) {
    const credential = sessionCredential({ method, headers: context.headers });
    if (!credential || !looksLikeSessionToken(credential.token)) {
      throw unauthorized(
        'A session is required: Authorization: Bearer <session_token>, or the console cookie.',
      );
    }
    if (credential.from === 'cookie') checkSameOrigin({ method, headers: context.headers }, deps.publicUrl);
    return (await sessions.resolve(credential.token)).session;
  }

  return [
    defineRoute({
      method: 'post',
      path: '/sessions/email',
      operationId: 'requestSignInEmail',
      summary:
        "E-mail a sign-in link to a user (always 202: whether the address is a user's is never said). The link works only with the cookie this answer sets (tv_sign_in, Path=/sessions): a browser keeps it; a client outside a browser keeps it like curl -c/-b and sends it with POST /sessions",
      tag,
      permission: null,
      returnsSensitive: [],
      body: signInEmailBody,
      responses: {
        202: {
          description:
            "If the address is a user's, a sign-in link (15 minutes, single use) is on its way, bound to this client by the tv_sign_in cookie set here (kept when the request already carries one)",
        },
        429: { description: 'Too many sign-in e-mails for this address or from this client (Retry-After)' },
      },
      async handle({ body, clientAddress, headers }) {
        await deps.takeSignInAllowance(body.email, clientAddress);
        // One nonce per browser: links it asks for, for any address, all work in it.
        const nonce = browserNonceOf(headers) ?? newBrowserNonce();
        const linkId = await sessions.requestLink(body.email, nonce);
        // Not awaited: the answer takes as long for an unknown address as for a known one.
        if (linkId) {
          void deps
            .enqueueSignInMail(linkId)
            .catch((error: unknown) => deps.logger.error({ err: error }, 'sign-in e-mail not queued'));
        }
        return { status: 202, headers: { 'set-cookie': signInCookie(nonce) } };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/sessions',
      operationId: 'createSession',
      summary:
        'Sign in with the token of a sign-in link, sent with the tv_sign_in cookie of the POST /sessions/email that asked for it: a session token (and the console cookie)',
      tag,
      permission: null,
      returnsSensitive: ['session-token'],
      body: createSessionBody,
      responses: {
        201: { description: 'Signed in; the session token is shown once', schema: createdSessionSchema },
        403: {
          description:
            'The link was requested from another browser or client (the tv_sign_in cookie is missing or not its): it stays usable there',
        },
        410: { description: 'The link was used, replaced by a newer one, or has expired' },
      },
      async handle({ body, headers }) {
        const { token, session } = await sessions.signIn(body.token, browserNonceOf(headers));
        return {
          status: 201,
          body: { session_token: token, ...session },
          headers: { 'set-cookie': cookie(token, Math.floor(deps.absoluteTimeoutMs / 1000)) },
        };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/sessions/self',
      operationId: 'getCurrentSession',
      summary: 'The signed-in user and the tenants where they are a member',
      tag,
      permission: null,
      returnsSensitive: [],
      responses: { 200: { description: 'The session', schema: currentSessionSchema } },
      async handle(context) {
        const session = await current(context, 'GET');
        return { status: 200, body: await sessions.describe(session) };
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/sessions/self',
      operationId: 'deleteCurrentSession',
      summary: 'Sign out: the session is refused from now on',
      tag,
      permission: null,
      returnsSensitive: [],
      query: z.strictObject({
        everywhere: z.enum(['true', 'false']).default('false').describe('End every session of the user'),
      }),
      responses: { 204: { description: 'Signed out' } },
      async handle(context) {
        const session = await current(context, 'DELETE');
        if (context.query.everywhere === 'true') await sessions.endAllOf(session.userId);
        else await sessions.end(session.id);
        return { status: 204, headers: { 'set-cookie': cookie('', 0) } };
      },
    }),
  ];
}
