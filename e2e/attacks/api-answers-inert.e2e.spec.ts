// The API shares its origin with the console, so any answer a hostile tenant can fill with its
// own strings (token metadata, names, an error naming a field) must be inert if a signed-in
// member's browser is made to open it as a page: no script, no plug-in, no framing, no sniffing.
import { describe, expect, it } from 'vitest';
import { useStack } from '../support/stack.ts';

const inertPolicy = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";
const hostileText = '<html><body><script>fetch("/sessions/self")</script></body></html>';

describe('every API answer is inert when opened as a page', () => {
  const env = useStack();

  const answers = async () => {
    const headers = { 'svc-api-key': env.tenant.apiKey, 'content-type': 'application/json' };
    const created = await fetch(`${env.stack.url}/tokens`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ type: 'token', data: 'x', metadata: { note: hostileText } }),
    });
    const { id } = (await created.json()) as { id: string };
    return {
      'a created token (201)': created,
      'a token echoing hostile metadata': await fetch(`${env.stack.url}/tokens/${id}`, { headers }),
      'a problem naming a field (400)': await fetch(`${env.stack.url}/tokens`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ type: hostileText, data: 'x' }),
      }),
      'an unknown route (404)': await fetch(`${env.stack.url}/${encodeURIComponent(hostileText)}`),
      'an unauthenticated call (401)': await fetch(`${env.stack.url}/tokens`),
      'the OpenAPI document': await fetch(`${env.stack.url}/openapi.json`),
      health: await fetch(`${env.stack.url}/healthz`),
    };
  };

  it('carries nosniff and a policy under which nothing loads, runs or frames', async () => {
    for (const [what, response] of Object.entries(await answers())) {
      expect.soft(response.headers.get('x-content-type-options'), what).toBe('nosniff');
      expect.soft(response.headers.get('content-security-policy'), what).toBe(inertPolicy);
    }
  });

  it('the pages that run script keep a policy of their own, which allows only their own scripts', async () => {
    for (const path of ['/console', '/docs']) {
      const policy = (await fetch(`${env.stack.url}${path}`)).headers.get('content-security-policy') ?? '';
      expect(policy, path).toContain("script-src 'self'");
      expect(policy, path).toContain("frame-ancestors 'none'");
    }
  });
});
