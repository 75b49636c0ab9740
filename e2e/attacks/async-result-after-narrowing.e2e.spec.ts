// Async reactor results from the attacker's side (issue 48, red team finding 4). A checkout
// integration's key may use cards (token:use on /pci/, reveal) and runs a reactor in the
// background. The tenant then narrows its rule to mask: a sync call now gets the masked number.
// The result of the earlier run still holds the full number; whoever holds the key reads it at
// /reactors/{id}/results/{rid}. The same for a reactor that reads cards through `svc` as its
// application, when that application's rule narrows. A result must follow the rules of now, as
// a read does: while what decides on each token it saw shows less than the run saw, it is gone.
import { describe, expect, it } from 'vitest';
import { eventually } from '@tokenvault/platform/testing';
import { uniqueCardNumber } from '../support/cards.ts';
import { createReactor, echoArgs } from '../support/reactors.ts';
import { useStack } from '../support/stack.ts';

interface Answer {
  id?: string;
  key?: string;
  status?: string | number;
  raw?: { number?: string };
  result?: { raw?: { number?: string } };
  async_reactor_request_id?: string;
  detail?: string;
}

const pciRule = (permission: string, transform: 'reveal' | 'mask') => ({
  container: '/pci/',
  permissions: [permission],
  transform,
});

describe('attack: an async reactor result keeps what a narrowed rule no longer shows', () => {
  const env = useStack({ LOG_LEVEL: 'warn' });

  const card = async () => {
    const number = uniqueCardNumber();
    const created = await env.tenant.client.tokens.create({
      type: 'card',
      data: { number, expiration_month: 4, expiration_year: 2031 },
    });
    return { number, id: created.id };
  };
  const application = async (name: string, permission: string) => {
    const created = await env.tenant.client.request<Answer>('POST', '/applications', {
      body: { name, type: 'private', permissions: [], rules: [pciRule(permission, 'reveal')] },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return { id: created.body.id!, key: created.body.key! };
  };
  const narrow = async (id: string, name: string, permission: string) => {
    const updated = await env.tenant.client.request('PUT', `/applications/${id}`, {
      body: { name, permissions: [], rules: [pciRule(permission, 'mask')] },
    });
    expect(updated.status, JSON.stringify(updated.body)).toBe(200);
  };
  const runInBackground = async (reactorId: string, args: unknown, apiKey: string, number: string) => {
    const client = env.tenant.client.withKey(apiKey);
    const queued = await client.request<Answer>('POST', `/reactors/${reactorId}/react-async`, {
      body: { args },
    });
    expect(queued.status, JSON.stringify(queued.body)).toBe(202);
    const path = `/reactors/${reactorId}/results/${queued.body.async_reactor_request_id!}`;
    await eventually(async () => {
      const result = await client.request<Answer>('GET', path);
      expect(result.body.result?.raw?.number).toBe(number);
    });
    return { client, path };
  };

  it('the caller’s token:use narrowed to mask: the result of a run it revealed to is gone (404), as a sync call masks', async () => {
    const { number, id } = await card();
    const checkout = await application('Checkout', 'token:use');
    const reactorId = await createReactor(env.tenant, {
      code: echoArgs,
      request_parameters: [{ name: 'number', type: 'string' }],
    });
    const args = { number: `{{ ${id} | json: '$.number' }}` };
    const { client, path } = await runInBackground(reactorId, args, checkout.key, number);

    await narrow(checkout.id, 'Checkout', 'token:use');
    const sync = await client.request<Answer>('POST', `/reactors/${reactorId}/react`, { body: { args } });
    expect(sync.status, JSON.stringify(sync.body)).toBe(200);
    expect(sync.body.raw?.number).not.toBe(number);

    const result = await client.request<Answer>('GET', path);
    expect(JSON.stringify(result.body)).not.toContain(number);
    expect(result.status).toBe(404);
    expect(result.body.detail).toContain('withdrawn');
  });

  it('the reactor’s application’s token:read narrowed to mask: the result of what `svc` read revealed is gone (404)', async () => {
    const { number, id } = await card();
    const reader = await application('Card reader', 'token:read');
    const reactorId = await createReactor(
      env.tenant,
      {
        code: 'module.exports = async (req) => ({ raw: { number: (await req.svc.tokens.retrieve(req.args.id)).data.number } });',
        request_parameters: [{ name: 'id', type: 'string' }],
      },
      { applicationId: reader.id },
    );
    const { client, path } = await runInBackground(reactorId, { id }, env.tenant.apiKey, number);

    await narrow(reader.id, 'Card reader', 'token:read');
    const sync = await client.request<Answer>('POST', `/reactors/${reactorId}/react`, {
      body: { args: { id } },
    });
    expect(sync.status, JSON.stringify(sync.body)).toBe(200);
    expect(sync.body.raw?.number).not.toBe(number);

    const result = await client.request<Answer>('GET', path);
    expect(JSON.stringify(result.body)).not.toContain(number);
    expect(result.status).toBe(404);
  });

  it('a rule left as it was, or widened, keeps the result', async () => {
    const { number, id } = await card();
    const checkout = await application('Checkout (unchanged)', 'token:use');
    const reactorId = await createReactor(env.tenant, {
      code: echoArgs,
      request_parameters: [{ name: 'number', type: 'string' }],
    });
    const { client, path } = await runInBackground(
      reactorId,
      { number: `{{ ${id} | json: '$.number' }}` },
      checkout.key,
      number,
    );
    const renamed = await env.tenant.client.request('PUT', `/applications/${checkout.id}`, {
      body: { name: 'Checkout (renamed)', permissions: ['token:use'], rules: [] },
    });
    expect(renamed.status).toBe(200);
    const result = await client.request<Answer>('GET', path);
    expect(result.status).toBe(200);
    expect(result.body.result?.raw?.number).toBe(number);
  });
});
