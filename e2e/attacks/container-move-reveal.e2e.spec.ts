// A token's containers decide which rules read it. The attacker holds a key that may update cards
// in /pci/ but not read them there (or reads them masked), and reads /general/ in full. It moves a
// card into /general/x/ (through both containers, then out of /pci/) and reads the card again
// through its /general/ rule, hoping for the number and the CVC. In the two-key form an
// update-only key with token:update on both containers moves the card for every /general/ reader.
// Changing a token's containers writes what other rules read: it needs a rule that reveals the
// token on every container it is in and goes to (403 naming body.containers), and nothing moves.
import { beforeAll, describe, expect, it } from 'vitest';
import { uniqueCardNumber } from '../support/cards.ts';
import { useStack } from '../support/stack.ts';

interface Token {
  id: string;
  data?: unknown;
  containers: string[];
}

interface Problem {
  errors?: Record<string, string[]>;
}

describe('attack: a key moves a card into a container where its rules reveal it', () => {
  const env = useStack({ LOG_LEVEL: 'warn' });
  const cvc = '418';

  const keyOf = async (name: string, rules: object[]) => {
    const created = await env.tenant.client.request<{ key: string }>('POST', '/applications', {
      body: { name, type: 'private', permissions: [], rules },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body.key;
  };
  const newCard = async () => {
    let number = uniqueCardNumber();
    while (number.slice(-4).includes(cvc)) number = uniqueCardNumber();
    const created = await env.tenant.client.request<Token>('POST', '/tokens', {
      body: { type: 'card', data: { number, expiration_month: 4, expiration_year: 2038, cvc } },
    });
    expect(created.status).toBe(201);
    expect(created.body.containers).toEqual(['/pci/high/']);
    return { id: created.body.id, number };
  };
  const move = (id: string, containers: string[], apiKey: string) =>
    env.tenant.client.request<Problem>('PATCH', `/tokens/${id}`, { body: { containers }, apiKey });
  const expectRefused = (answer: { status: number; body: Problem }) => {
    expect(answer.status).toBe(403);
    expect(Object.keys(answer.body.errors ?? {})).toEqual(['body.containers']);
  };
  const expectStayed = async (id: string, number: string, reader: string) => {
    const asAdmin = await env.tenant.client.request<Token>('GET', `/tokens/${id}`);
    expect(asAdmin.body.containers).toEqual(['/pci/high/']);
    const read = await env.tenant.client.request<Token>('GET', `/tokens/${id}`, { apiKey: reader });
    expect(JSON.stringify(read.body)).not.toContain(number.slice(0, 8));
    expect(JSON.stringify(read.body)).not.toContain(`"cvc"`);
  };

  let updaterWithoutRead: string;
  let maskedUpdater: string;
  let updateOnly: string;
  let generalReader: string;

  beforeAll(async () => {
    updaterWithoutRead = await keyOf('general reader that may update cards', [
      {
        container: '/general/',
        transform: 'reveal',
        permissions: ['token:read', 'token:update'],
        priority: 1,
      },
      { container: '/pci/', permissions: ['token:update'], priority: 2 },
    ]);
    maskedUpdater = await keyOf('masked support tool that may update', [
      { container: '/pci/', transform: 'mask', permissions: ['token:read', 'token:update'], priority: 1 },
      {
        container: '/general/',
        transform: 'reveal',
        permissions: ['token:read', 'token:update'],
        priority: 2,
      },
    ]);
    updateOnly = await keyOf('mover', [
      { container: '/pci/', permissions: ['token:update'] },
      { container: '/general/', permissions: ['token:update'] },
    ]);
    generalReader = await keyOf('general reader', [
      { container: '/general/', transform: 'reveal', permissions: ['token:read'] },
    ]);
  });

  it('a key that may update /pci/ but not read there moves a card to /general/x/ and reads it', async () => {
    const card = await newCard();
    expect(
      (await env.tenant.client.request('GET', `/tokens/${card.id}`, { apiKey: updaterWithoutRead })).status,
    ).toBe(403);
    expectRefused(await move(card.id, ['/pci/high/', '/general/x/'], updaterWithoutRead));
    expectRefused(await move(card.id, ['/general/x/'], updaterWithoutRead));
    const read = await env.tenant.client.request<Token>('GET', `/tokens/${card.id}`, {
      apiKey: updaterWithoutRead,
    });
    expect(read.status).toBe(403);
    expect(JSON.stringify(read.body)).not.toContain(card.number.slice(0, 8));
    await expectStayed(card.id, card.number, generalReader);
  });

  it('a key whose rule masks /pci/ moves a card to /general/x/, where its other rule reveals', async () => {
    const card = await newCard();
    expectRefused(await move(card.id, ['/general/x/'], maskedUpdater));
    expectRefused(await move(card.id, ['/pci/high/', '/general/x/'], maskedUpdater));
    const read = await env.tenant.client.request<Token>('GET', `/tokens/${card.id}`, {
      apiKey: maskedUpdater,
    });
    expect(read.status).toBe(200);
    expect(JSON.stringify(read.body)).not.toContain(card.number.slice(0, 8));
    expect(JSON.stringify(read.body)).not.toContain(`"cvc"`);
    await expectStayed(card.id, card.number, generalReader);
  });

  it('two keys: an update-only key moves a card for every /general/ reader', async () => {
    const card = await newCard();
    expect(
      (await env.tenant.client.request('GET', `/tokens/${card.id}`, { apiKey: generalReader })).status,
    ).toBe(403);
    expectRefused(await move(card.id, ['/general/x/'], updateOnly));
    expect(
      (await env.tenant.client.request('GET', `/tokens/${card.id}`, { apiKey: generalReader })).status,
    ).toBe(403);
    await expectStayed(card.id, card.number, generalReader);
  });

  it('a key that reveals the card on both containers may still move it', async () => {
    const card = await newCard();
    const mover = await keyOf('revealing mover', [
      { container: '/pci/', transform: 'reveal', permissions: ['token:read', 'token:update'] },
      { container: '/general/', transform: 'reveal', permissions: ['token:read', 'token:update'] },
    ]);
    const moved = await move(card.id, ['/general/x/'], mover);
    expect(moved.status, JSON.stringify(moved.body)).toBe(200);
    const read = await env.tenant.client.request<Token>('GET', `/tokens/${card.id}`, {
      apiKey: generalReader,
    });
    expect(read.status).toBe(200);
    expect(JSON.stringify(read.body.data)).toContain(card.number);
  });
});
