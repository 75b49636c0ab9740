import { describe, expect, it } from 'vitest';
import { Problem } from '@tokenvault/platform';
import { checkSameOrigin, cookieValue, sessionCredential } from './caller.ts';

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
