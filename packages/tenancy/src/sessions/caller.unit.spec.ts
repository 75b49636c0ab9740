import { describe, expect, it } from 'vitest';
import { Problem, type Principal } from '@tokenvault/platform';
import {
  checkSameOrigin,
  cookieValue,
  createCallerAuthenticator,
  isSessionAuthorization,
  sessionCredential,
} from './caller.ts';
import type { Sessions } from './sessions.service.ts';

const publicUrl = 'https://vault.example.test';
const refusal = (request: Parameters<typeof checkSameOrigin>[0]) => {
  try {
    checkSameOrigin(request, publicUrl);
    return undefined;
  } catch (error) {
    return error instanceof Problem ? error.status : 'not a problem';
  }
};

describe('the session a request carries', () => {
  it('takes the bearer token first, else the console cookie', () => {
    expect(
      sessionCredential({
        method: 'GET',
        headers: { authorization: 'Bearer tvs_a', cookie: 'tv_session=tvs_b' },
      }),
    ).toEqual({
      token: 'tvs_a',
      from: 'bearer',
    });
    expect(sessionCredential({ method: 'GET', headers: { cookie: 'other=1; tv_session=tvs_b' } })).toEqual({
      token: 'tvs_b',
      from: 'cookie',
    });
    expect(sessionCredential({ method: 'GET', headers: { authorization: 'Basic abc' } })).toBeUndefined();
    expect(cookieValue({ cookie: 'tv_sessionx=1; a=2' }, 'tv_session')).toBeUndefined();
  });
});

describe('the same-origin check of cookie requests', () => {
  it('lets safe methods through from anywhere', () => {
    expect(refusal({ method: 'GET', headers: { 'sec-fetch-site': 'cross-site' } })).toBeUndefined();
  });

  it('refuses a safe method that a script of another origin sent: cookies never authenticate cross-origin', () => {
    expect(
      refusal({ method: 'GET', headers: { 'sec-fetch-site': 'same-site', 'sec-fetch-mode': 'cors' } }),
    ).toBe(403);
    expect(
      refusal({ method: 'GET', headers: { origin: 'https://shop.example', host: 'vault.example' } }),
    ).toBe(403);
    expect(
      refusal({ method: 'GET', headers: { 'sec-fetch-site': 'same-origin', 'sec-fetch-mode': 'cors' } }),
    ).toBeUndefined();
    expect(refusal({ method: 'GET', headers: { origin: publicUrl } })).toBeUndefined();
    // A link followed from another site to a page of ours (a navigation) still opens it.
    expect(
      refusal({ method: 'GET', headers: { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate' } }),
    ).toBeUndefined();
  });

  it('accepts Sec-Fetch-Site same-origin, or an Origin of PUBLIC_URL or of the Host', () => {
    expect(refusal({ method: 'POST', headers: { 'sec-fetch-site': 'same-origin' } })).toBeUndefined();
    expect(refusal({ method: 'DELETE', headers: { origin: publicUrl } })).toBeUndefined();
    expect(
      refusal({ method: 'PUT', headers: { origin: 'http://127.0.0.1:8080', host: '127.0.0.1:8080' } }),
    ).toBeUndefined();
  });

  it('refuses another site, another origin, and a request that says neither (403)', () => {
    expect(refusal({ method: 'POST', headers: { 'sec-fetch-site': 'cross-site', origin: publicUrl } })).toBe(
      403,
    );
    expect(refusal({ method: 'POST', headers: { 'sec-fetch-site': 'same-site' } })).toBe(403);
    expect(
      refusal({ method: 'POST', headers: { origin: 'https://evil.example', host: 'vault.example.test' } }),
    ).toBe(403);
    expect(refusal({ method: 'PATCH', headers: { origin: 'null' } })).toBe(403);
    expect(refusal({ method: 'POST', headers: {} })).toBe(403);
  });
});

describe('who a request acts as', () => {
  const session = `tvs_${'s'.repeat(43)}`;
  const keyPrincipal = { tenantId: 't', actorId: 'key', actorType: 'application' } as unknown as Principal;
  const resolved: string[] = [];
  const authenticate = createCallerAuthenticator({
    apiKeys: async (apiKey) => {
      if (apiKey !== 'key_valid') throw new Problem(401, 'unauthorized', 'Unauthorized', 'no key');
      return keyPrincipal;
    },
    sessions: {
      resolve: async (token: string) => {
        resolved.push(token);
        return {
          session: { id: 'session', userId: 'user', expiresAt: new Date() },
          memberships: [{ tenantId: 't', settings: {} }],
        };
      },
    } as unknown as Sessions,
    publicUrl,
  });

  it('with an API key, reads neither Authorization nor cookies: they may be a destination’s', async () => {
    for (const headers of [
      { authorization: 'Bearer sk_test_processor' },
      { authorization: `Bearer ${session}` },
      { cookie: `tv_session=${session}` },
    ]) {
      await expect(authenticate('key_valid', { method: 'POST', headers })).resolves.toBe(keyPrincipal);
    }
    expect(resolved).toEqual([]);
  });

  it('without one, a bearer or the cookie is read as a session', async () => {
    const principal = await authenticate(undefined, {
      method: 'GET',
      headers: { authorization: `Bearer ${session}` },
    });
    expect(principal).toMatchObject({ actorId: 'user', actorType: 'user', tenantId: 't' });
    expect(resolved).toEqual([session]);
    await expect(
      authenticate(undefined, { method: 'GET', headers: { authorization: 'Bearer sk_test_processor' } }),
    ).rejects.toMatchObject({ status: 401 });
  });

  it('tells an Authorization that carries one of the service’s sessions', () => {
    expect(isSessionAuthorization(`Bearer ${session}`)).toBe(true);
    expect(isSessionAuthorization(['Basic abc', `bearer ${session}`])).toBe(true);
    expect(isSessionAuthorization('Bearer sk_test_processor')).toBe(false);
    expect(isSessionAuthorization(`Basic ${session}`)).toBe(false);
  });
});
