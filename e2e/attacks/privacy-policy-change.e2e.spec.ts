// A token's restriction policy decides what a key with a rule on a lower impact level of its
// classification sees of it (a reader on /pii/low/ reads a /pii/high/ token masked, or not at
// all). The attacker holds a key that may update /pii/high/ but not read it, beside a reader on
// /pii/low/ (a support tool). It changes a social security number's policy from redact to mask,
// or lowers its impact level, so that the reader sees what it did not. Changing a token's privacy
// writes what other keys read: it needs a rule that reveals the token on every container it is in
// and goes to (403 naming body.privacy), and the policy stays.
import { beforeAll, describe, expect, it } from 'vitest';
import { useStack } from '../support/stack.ts';

interface Token {
  id: string;
  data?: unknown;
  containers: string[];
  privacy: { impact_level: string; restriction_policy: string };
}

interface Problem {
  errors?: Record<string, string[]>;
}

describe('attack: an update-only key changes a token’s privacy to change what others read', () => {
  const env = useStack({ LOG_LEVEL: 'warn' });
  let ssnId: string;
  let updateOnly: string;
  let lowReader: string;

  const keyOf = async (name: string, rules: object[]) => {
    const created = await env.tenant.client.request<{ key: string }>('POST', '/applications', {
      body: { name, type: 'private', permissions: [], rules },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body.key;
  };
  const readAsLowReader = () =>
    env.tenant.client.request<Token>('GET', `/tokens/${ssnId}`, { apiKey: lowReader });

  beforeAll(async () => {
    const created = await env.tenant.client.request<Token>('POST', '/tokens', {
      body: {
        type: 'social_security_number',
        data: '123-45-6789',
        privacy: { restriction_policy: 'redact' },
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.containers).toEqual(['/pii/high/']);
    ssnId = created.body.id;
    updateOnly = await keyOf('pii updater', [{ container: '/pii/', permissions: ['token:update'] }]);
    lowReader = await keyOf('low-impact pii reader', [
      { container: '/pii/low/', transform: 'reveal', permissions: ['token:read'] },
    ]);
  });

  it('the update-only key sets the policy to mask: refused, the reader still gets no data', async () => {
    const before = await readAsLowReader();
    expect(before.status).toBe(200);
    expect(before.body).not.toHaveProperty('data');

    const patched = await env.tenant.client.request<Problem>('PATCH', `/tokens/${ssnId}`, {
      body: { privacy: { restriction_policy: 'mask' } },
      apiKey: updateOnly,
    });
    expect(patched.status).toBe(403);
    expect(Object.keys(patched.body.errors ?? {})).toEqual(['body.privacy']);

    const after = await readAsLowReader();
    expect(after.status).toBe(200);
    expect(after.body).not.toHaveProperty('data');
    expect(JSON.stringify(after.body)).not.toContain('6789');
    const asAdmin = await env.tenant.client.request<Token>('GET', `/tokens/${ssnId}`);
    expect(asAdmin.body.privacy.restriction_policy).toBe('redact');
  });

  it('the update-only key lowers a token’s impact level, moving it where a reader reveals it: refused', async () => {
    const created = await env.tenant.client.request<Token>('POST', '/tokens', {
      body: {
        data: { diagnosis: 'F20.9' },
        privacy: { classification: 'pii', impact_level: 'high', restriction_policy: 'redact' },
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.containers).toEqual(['/pii/high/']);
    const moderateReader = await keyOf('moderate-impact pii reader', [
      { container: '/pii/moderate/', transform: 'reveal', permissions: ['token:read'] },
    ]);
    const readAsModerateReader = () =>
      env.tenant.client.request<Token>('GET', `/tokens/${created.body.id}`, { apiKey: moderateReader });
    expect((await readAsModerateReader()).body).not.toHaveProperty('data');

    const patched = await env.tenant.client.request<Problem>('PATCH', `/tokens/${created.body.id}`, {
      body: { privacy: { impact_level: 'moderate' } },
      apiKey: updateOnly,
    });
    expect(patched.status).toBe(403);
    expect(Object.keys(patched.body.errors ?? {})).toEqual(['body.privacy']);
    const after = await readAsModerateReader();
    expect(after.body).not.toHaveProperty('data');
    expect(JSON.stringify(after.body)).not.toContain('F20.9');
    const asAdmin = await env.tenant.client.request<Token>('GET', `/tokens/${created.body.id}`);
    expect(asAdmin.body.containers).toEqual(['/pii/high/']);
    expect(asAdmin.body.privacy.impact_level).toBe('high');
  });

  it('the same privacy sent back (an SDK returning what it read) changes nothing and is no change', async () => {
    const patched = await env.tenant.client.request('PATCH', `/tokens/${ssnId}`, {
      body: { privacy: { classification: 'pii', impact_level: 'high', restriction_policy: 'redact' } },
      apiKey: updateOnly,
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
  });
});
