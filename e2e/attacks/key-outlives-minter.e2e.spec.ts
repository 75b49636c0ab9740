// Key expiry from the attacker's side (issue 48, finding 11). The owner hands a contractor a key
// that expires in a few seconds, of an application that may manage applications (and so mint keys
// for itself). Before it expires, the contractor mints keys that do not: one for its own
// application, one of a new application it creates. An expiry that bounds only the key it is on
// bounds nothing: after the first key expired, those keep working. A proxy without auth is a key
// too (its proxy key alone calls it, as its application): made by the expiring key, it outlives it.
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpDestination, type TestDestination } from '../support/destinations.ts';
import { useStack } from '../support/stack.ts';

interface Answer {
  id: string;
  key: string;
  expires_at?: string;
  errors?: Record<string, string[]>;
}

describe('attack: an expiring key mints keys that outlive it', () => {
  const env = useStack({ LOG_LEVEL: 'warn', PROXY_ALLOWED_PRIVATE_ADDRESSES: '127.0.0.1' });
  const lifetimeMs = 5_000;
  let destination: TestDestination;
  let applicationId: string;
  let expiring: Answer;

  beforeAll(async () => {
    destination = await startHttpDestination('127.0.0.1');
    const owner = env.tenant.client;
    const application = await owner.request<Answer>('POST', '/applications', {
      body: {
        name: 'Contractor',
        type: 'private',
        permissions: ['application:create', 'application:update', 'application:read', 'proxy:create'],
      },
    });
    expect(application.status).toBe(201);
    applicationId = application.body.id;
    const key = await owner.request<Answer>('POST', `/applications/${applicationId}/keys`, {
      body: { expires_at: new Date(Date.now() + lifetimeMs).toISOString() },
    });
    expect(key.status, JSON.stringify(key.body)).toBe(201);
    expiring = key.body;
  });
  afterAll(async () => destination?.close());

  const as = (apiKey: string) => env.tenant.client.withKey(apiKey);
  const statusOf = async (apiKey: string) => (await as(apiKey).request('GET', '/applications/key')).status;

  it('makes no proxy callable with its proxy key alone (403 naming body.require_auth); one needing an API key it may', async () => {
    const proxy = (require_auth: boolean) =>
      as(expiring.key).request<Answer>('POST', '/proxies', {
        body: { name: 'Contractor proxy', destination_url: `${destination.url}/page`, require_auth },
      });
    const withoutAuth = await proxy(false);
    expect(withoutAuth.status, JSON.stringify(withoutAuth.body)).toBe(403);
    expect(Object.keys(withoutAuth.body.errors ?? {})).toEqual(['body.require_auth']);
    expect((await proxy(true)).status).toBe(201);
  });

  it('mints no key that outlives it: a later expiry is refused (400 naming the field), none given takes its own, and every key it minted stops with it', async () => {
    const later = await as(expiring.key).request<Answer>('POST', `/applications/${applicationId}/keys`, {
      body: { expires_at: new Date(Date.now() + 3_600_000).toISOString() },
    });
    expect(later.status).toBe(400);
    expect(Object.keys(later.body.errors ?? {})).toEqual(['body.expires_at']);

    const minted = await as(expiring.key).request<Answer>('POST', `/applications/${applicationId}/keys`);
    expect(minted.status, JSON.stringify(minted.body)).toBe(201);
    const created = await as(expiring.key).request<Answer>('POST', '/applications', {
      body: { name: 'Contractor’s own', type: 'private', permissions: ['application:read'] },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const ownKeys = await env.tenant.client.request<Answer[]>('GET', `/applications/${created.body.id}/keys`);
    expect(ownKeys.body.map((key) => key.expires_at)).toEqual([expiring.expires_at]);
    expect(minted.body.expires_at).toBe(expiring.expires_at);
    expect(await statusOf(minted.body.key)).toBe(200);
    expect(await statusOf(created.body.key)).toBe(200);

    await sleep(Date.parse(expiring.expires_at!) - Date.now() + 500);
    expect(await statusOf(expiring.key)).toBe(401);
    expect(await statusOf(minted.body.key), 'the key minted for its own application').toBe(401);
    expect(await statusOf(created.body.key), 'the key of the application it created').toBe(401);
  });

  it('a key without expiry mints keys as before, without an expiry or with one', async () => {
    const owner = env.tenant.client;
    const forever = await owner.request<Answer>('POST', `/applications/${applicationId}/keys`);
    expect(forever.status).toBe(201);
    expect(forever.body.expires_at).toBeUndefined();
    const sooner = new Date(Date.now() + 60_000).toISOString();
    const expiringOnPurpose = await as(forever.body.key).request<Answer>(
      'POST',
      `/applications/${applicationId}/keys`,
      { body: { expires_at: sooner } },
    );
    expect(expiringOnPurpose.status).toBe(201);
    expect(expiringOnPurpose.body.expires_at).toBe(sooner);
  });
});
