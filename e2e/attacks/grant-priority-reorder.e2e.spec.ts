// Grants from the attacker's side (issue 48, finding 4). The attacker holds a key whose rules give
// it less than the data somewhere, and may create applications or replace its own. It asks for
// rules that each look held, container by container, but decide otherwise on a token: (a) its own
// two rules at swapped priorities, so that on a card in both containers the revealing one decides
// first; (b) only its revealing rule at a lower impact level, so that on a token at the higher
// level (where it held a redacting rule) the token's restriction policy decides instead.
import { beforeAll, describe, expect, it } from 'vitest';
import { uniqueCardNumber } from '../support/cards.ts';
import { useStack } from '../support/stack.ts';

interface Answer {
  id: string;
  key: string;
  data?: unknown;
  errors?: Record<string, string[]>;
}

describe('attack: a key reorders or drops its rules to read more than it holds', () => {
  const env = useStack({ LOG_LEVEL: 'warn' });
  const number = uniqueCardNumber();
  const ssn = '123-45-6789';
  const managing = ['application:create', 'application:update', 'application:read'];
  // (a) /pci/ masks before /general/ reveals: a card in both containers reads masked.
  const heldA = [
    { container: '/pci/', priority: 1, transform: 'mask', permissions: ['token:read'] },
    { container: '/general/', priority: 2, transform: 'reveal', permissions: ['token:read'] },
  ];
  const swapped = [
    { container: '/pci/', priority: 2, transform: 'mask', permissions: ['token:read'] },
    { container: '/general/', priority: 1, transform: 'reveal', permissions: ['token:read'] },
  ];
  // (b) /pii/low/ reveals, /pii/high/ redacts: an SSN (pii, high, policy mask) reads redacted.
  const heldB = [
    { container: '/pii/low/', priority: 1, transform: 'reveal', permissions: ['token:read'] },
    { container: '/pii/high/', priority: 2, transform: 'redact', permissions: ['token:read'] },
  ];
  const lowOnly = [{ container: '/pii/low/', priority: 1, transform: 'reveal', permissions: ['token:read'] }];
  let cardId: string;
  let ssnId: string;
  let attackerA: { id: string; key: string };
  let attackerB: { id: string; key: string };

  const createApplication = async (rules: unknown[], apiKey?: string) =>
    env.tenant.client.request<Answer>('POST', '/applications', {
      body: { name: 'Attacker', type: 'private', permissions: managing, rules },
      ...(apiKey ? { apiKey } : {}),
    });
  const read = async (id: string, apiKey: string) =>
    env.tenant.client.request<Answer>('GET', `/tokens/${id}`, { apiKey });

  beforeAll(async () => {
    const admin = env.tenant.client;
    const card = await admin.request<Answer>('POST', '/tokens', {
      body: {
        type: 'card',
        data: { number, expiration_month: 9, expiration_year: 2031 },
        containers: ['/pci/high/', '/general/orders/'],
      },
    });
    expect(card.status, JSON.stringify(card.body)).toBe(201);
    cardId = card.body.id;
    const ssnToken = await admin.request<Answer>('POST', '/tokens', {
      body: { type: 'social_security_number', data: ssn },
    });
    expect(ssnToken.status, JSON.stringify(ssnToken.body)).toBe(201);
    ssnId = ssnToken.body.id;
    const a = await createApplication(heldA);
    const b = await createApplication(heldB);
    expect([a.status, b.status]).toEqual([201, 201]);
    attackerA = a.body;
    attackerB = b.body;
    // What the attackers hold: the card masked, the SSN redacted.
    expect(JSON.stringify((await read(cardId, attackerA.key)).body)).not.toContain(number);
    const redacted = await read(ssnId, attackerB.key);
    expect(redacted.status).toBe(200);
    expect(redacted.body.data).toBeUndefined();
  });

  it('(a) cannot create an application with its rules at swapped priorities (403 naming the rule), nor read the card in clear through one', async () => {
    const created = await createApplication(swapped, attackerA.key);
    if (created.status === 201) {
      // What the hole gave: the card's number in clear.
      expect(JSON.stringify((await read(cardId, created.body.key)).body)).not.toContain(number);
    }
    expect(created.status).toBe(403);
    expect(Object.keys(created.body.errors ?? {})).toEqual(['body.rules.1.transform']);
  });

  it('(a) cannot swap the priorities of its own rules (403), and still reads the card masked', async () => {
    const replaced = await env.tenant.client.request<Answer>('PUT', `/applications/${attackerA.id}`, {
      body: { name: 'Attacker', permissions: managing, rules: swapped },
      apiKey: attackerA.key,
    });
    expect(JSON.stringify((await read(cardId, attackerA.key)).body)).not.toContain(number);
    expect(replaced.status).toBe(403);
    expect(Object.keys(replaced.body.errors ?? {})).toEqual(['body.rules.1.transform']);
    const own = await env.tenant.client.request<{ rules: unknown[] }>('GET', `/applications/${attackerA.id}`);
    expect(own.body.rules).toMatchObject(heldA);
  });

  it('(b) cannot create an application holding only its lower-level rule, whose restriction policy masks where it redacts (403), nor read the SSN masked', async () => {
    const created = await createApplication(lowOnly, attackerB.key);
    if (created.status === 201) {
      const masked = await read(ssnId, created.body.key);
      expect(masked.body.data, 'the SSN reads masked through the new application').toBeUndefined();
    }
    expect(created.status).toBe(403);
    expect(Object.keys(created.body.errors ?? {})).toEqual(['body.rules.0.transform']);
  });

  it('what decides as the caller does on every token is still granted: the same rules, or fewer that narrow', async () => {
    expect((await createApplication(heldA, attackerA.key)).status).toBe(201);
    expect((await createApplication(heldB, attackerB.key)).status).toBe(201);
    expect((await createApplication([heldA[0]!], attackerA.key)).status).toBe(201);
    expect(
      (
        await createApplication(
          [{ container: '/pii/high/', transform: 'redact', permissions: ['token:read'] }],
          attackerB.key,
        )
      ).status,
    ).toBe(201);
  });
});
