// Async reactor results after a token's data changed (issue 48, red team round 2, finding R2). A
// checkout integration's key may use cards (token:use on /pci/, reveal) and runs a reactor in the
// background that echoes the card number. The tenant then replaces the token's data (a new card
// number under the same token id). The result of the earlier run still answers the old number to
// whoever holds the key: derived data must go with the data it came from. A result is withdrawn
// (404, as for a deleted token) once a token it saw was changed after the run began.
import { describe, expect, it } from 'vitest';
import { eventually } from '@tokenvault/platform/testing';
import { uniqueCardNumber } from '../support/cards.ts';
import { createReactor, echoArgs } from '../support/reactors.ts';
import { useStack } from '../support/stack.ts';

interface Answer {
  id?: string;
  key?: string;
  result?: { raw?: { number?: string } };
  async_reactor_request_id?: string;
  detail?: string;
}

describe('attack: an async reactor result keeps a card number the token no longer holds', () => {
  const env = useStack({ LOG_LEVEL: 'warn' });

  it('the token’s data replaced after the run: its result is gone (404), the old number is not answered', async () => {
    const number = uniqueCardNumber();
    const token = await env.tenant.client.tokens.create({
      type: 'card',
      data: { number, expiration_month: 4, expiration_year: 2031 },
    });
    const checkout = await env.tenant.client.request<Answer>('POST', '/applications', {
      body: {
        name: 'Checkout',
        type: 'private',
        permissions: [],
        rules: [{ container: '/pci/', permissions: ['token:use'], transform: 'reveal' }],
      },
    });
    expect(checkout.status, JSON.stringify(checkout.body)).toBe(201);
    const client = env.tenant.client.withKey(checkout.body.key!);
    const reactorId = await createReactor(env.tenant, {
      code: echoArgs,
      request_parameters: [{ name: 'number', type: 'string' }],
    });
    const queued = await client.request<Answer>('POST', `/reactors/${reactorId}/react-async`, {
      body: { args: { number: `{{ ${token.id} | json: '$.number' }}` } },
    });
    expect(queued.status, JSON.stringify(queued.body)).toBe(202);
    const path = `/reactors/${reactorId}/results/${queued.body.async_reactor_request_id!}`;
    await eventually(async () => {
      const result = await client.request<Answer>('GET', path);
      expect(result.body.result?.raw?.number).toBe(number);
    });

    const replacement = uniqueCardNumber();
    const patched = await env.tenant.client.request('PATCH', `/tokens/${token.id}`, {
      body: { data: { number: replacement, expiration_month: 4, expiration_year: 2031 } },
      headers: { 'content-type': 'application/merge-patch+json' },
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);

    const result = await client.request<Answer>('GET', path);
    expect(JSON.stringify(result.body)).not.toContain(number);
    expect(result.status).toBe(404);
    expect(result.body.detail).toContain('withdrawn');
  });
});
