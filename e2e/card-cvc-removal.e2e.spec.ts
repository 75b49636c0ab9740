import { describe, expect, it } from 'vitest';
import { eventually } from '@tokenvault/platform/testing';
import { uniqueCardNumber } from './support/cards.ts';
import { useStack } from './support/stack.ts';

interface Token {
  id: string;
  data?: Record<string, unknown>;
  [field: string]: unknown;
}
interface Log {
  entity_id: string;
  operation: string;
  message: string;
}

describe('a card’s CVC is removed CARD_CVC_TTL_SECONDS after it was given', () => {
  const env = useStack({ CARD_CVC_TTL_SECONDS: '2' });
  const read = (id: string) => env.tenant.client.request<Token>('GET', `/tokens/${id}`);
  const createCard = async (cvc = '123') => {
    const number = uniqueCardNumber();
    const created = await env.tenant.client.request<Token>('POST', '/tokens', {
      body: {
        type: 'card',
        data: { number, expiration_month: 3, expiration_year: 2031, cvc },
        metadata: { customer: 'c-7' },
        containers: ['/pci/high/', '/cards/'],
      },
    });
    expect(created.status).toBe(201);
    return { id: created.body.id, number };
  };
  /** The outcomes the worker logged for its removals. */
  const outcomes = () =>
    env.stack.logs
      .filter((line) => line.includes('card CVC removal'))
      .map((line) => (JSON.parse(line) as { outcome?: string }).outcome);

  it('removes the CVC and nothing else, and logs it', async () => {
    const { id, number } = await createCard();
    const before = await read(id);
    expect(before.body.data).toEqual({ number, expiration_month: 3, expiration_year: 2031, cvc: '123' });
    await eventually(async () => {
      expect((await read(id)).body.data).toEqual({ number, expiration_month: 3, expiration_year: 2031 });
    }, 20_000);
    const { data: _before, ...unchanged } = before.body;
    const { data: _after, ...after } = (await read(id)).body;
    // Metadata, containers, fingerprint, summary, privacy, dates: as they were (not an update).
    expect(after).toEqual(unchanged);
    await eventually(async () => {
      const logs = await env.tenant.client.request<{ data: Log[] }>('GET', '/logs', {
        query: { entity_id: id },
      });
      expect(logs.body.data.map((log) => [log.operation, log.message])).toContainEqual([
        'update',
        'Card CVC removed (its retention time passed; old key destroyed)',
      ]);
    });
  });

  it('a CVC given again by an update keeps it until its own time', async () => {
    const { id } = await createCard();
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const updated = await env.tenant.client.request<Token>('PATCH', `/tokens/${id}`, {
      body: { data: { cvc: '456' } },
    });
    expect(updated.status).toBe(200);
    // The first CVC's job finds a newer one and leaves it.
    await eventually(async () => expect(outcomes()).toContain('renewed'), 20_000);
    expect((await read(id)).body.data).toMatchObject({ cvc: '456' });
    await eventually(async () => expect((await read(id)).body.data).not.toHaveProperty('cvc'), 20_000);
  });

  it('a card deleted before its time: the job finds it gone', async () => {
    const { id } = await createCard();
    expect((await env.tenant.client.request('DELETE', `/tokens/${id}`)).status).toBe(204);
    await eventually(async () => expect(outcomes()).toContain('gone'), 20_000);
  });

  it('a card without a CVC, and other types, have nothing to remove', async () => {
    const number = uniqueCardNumber();
    const created = await env.tenant.client.tokens.create({
      type: 'card',
      data: { number, expiration_month: 3, expiration_year: 2031 },
    });
    const token = await env.tenant.client.tokens.create({ data: { cvc: 'not a card' } });
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect((await read(created.id)).body.data).toEqual({
      number,
      expiration_month: 3,
      expiration_year: 2031,
    });
    expect((await read(token.id)).body.data).toEqual({ cvc: 'not a card' });
  });
});
