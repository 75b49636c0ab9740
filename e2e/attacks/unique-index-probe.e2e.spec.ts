// The attacker holds the tenant's public key (in every browser: `token:create` only) or a private
// key that may only create tokens, and wants to know whether the tenant holds a value (an e-mail
// address, an SSN). A unique index's claim spans every type and container of the tenant: a create
// with `{ "expression": "{{ data }}", "unique": true }` was a 409 exactly when some token, one the
// key may never read, held the guess. Its answer must not depend on the tenant's data.
import { beforeAll, describe, expect, it } from 'vitest';
import { useStack } from '../support/stack.ts';

describe('attack: a key that may not read tests the tenant’s data through unique-index 409s', () => {
  const env = useStack();
  const held = `ceo-${Date.now()}@example.com`;
  const notHeld = `nobody-${Date.now()}@example.com`;
  const unique = [{ expression: '{{ data }}', unique: true }];

  beforeAll(async () => {
    const stored = await env.tenant.client.request('POST', '/tokens', {
      body: { data: held, containers: ['/hr/'], search_indexes: unique },
    });
    expect(stored.status).toBe(201);
  });

  it('a public key and a create-only key get the same answer for a held and an unheld value', async () => {
    const publicKey = (
      await env.tenant.client.applications.create({
        name: 'checkout page',
        type: 'public',
        permissions: ['token:create'],
      })
    ).key;
    const creatorKey = (
      await env.tenant.client.applications.create({
        name: 'creator',
        type: 'private',
        rules: [{ container: '/general/', permissions: ['token:create'] }],
      })
    ).key;
    for (const apiKey of [publicKey, creatorKey]) {
      const probe = async (value: string) => {
        const answer = await env.tenant.client.request<{ title?: string; detail?: string }>(
          'POST',
          '/tokens',
          { body: { data: value, search_indexes: unique }, apiKey },
        );
        return { status: answer.status, title: answer.body.title, detail: answer.body.detail };
      };
      const forHeld = await probe(held);
      expect(forHeld.status, 'the held value is answered a 409').not.toBe(409);
      expect(forHeld).toEqual(await probe(notHeld));
    }
  });
});
