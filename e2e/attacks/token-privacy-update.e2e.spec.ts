// An attacker holds a key that may update tokens in /general/high/ and read /general/low/ (where
// another team keeps low-impact data in full). It wants a high-impact token's data: lowering the
// token's impact level on PATCH would move it to /general/low/, where its own rule reveals it.
// A key may not move a token into containers it may not update, by its privacy or its containers;
// nor make a card low impact, nor relabel a card's data as general.
import { describe, expect, it } from 'vitest';
import { uniqueCardNumber } from '../support/cards.ts';
import { useStack } from '../support/stack.ts';

interface Token {
  id: string;
  data?: unknown;
  containers: string[];
  privacy?: { impact_level?: string };
}

describe('attack: a key lowers a token’s impact level to read it through a wider rule', () => {
  const env = useStack({ LOG_LEVEL: 'warn' });

  it('is refused (403) and the token stays where it was, unread', async () => {
    const admin = env.tenant.client;
    const secret = await admin.request<Token>('POST', '/tokens', { body: { data: 'board minutes' } });
    expect(secret.status).toBe(201);
    expect(secret.body.containers).toEqual(['/general/high/']);
    const application = await admin.request<{ key: string }>('POST', '/applications', {
      body: {
        name: 'updater',
        type: 'private',
        permissions: [],
        rules: [
          { container: '/general/high/', transform: 'redact', permissions: ['token:update', 'token:read'] },
          { container: '/general/low/', transform: 'reveal', permissions: ['token:read'] },
        ],
      },
    });
    expect(application.status, JSON.stringify(application.body)).toBe(201);
    const key = application.body.key;

    const lowered = await admin.request('PATCH', `/tokens/${secret.body.id}`, {
      body: { privacy: { impact_level: 'low' } },
      apiKey: key,
    });
    expect(lowered.status).toBe(403);
    const moved = await admin.request('PATCH', `/tokens/${secret.body.id}`, {
      body: { privacy: { impact_level: 'low' }, containers: ['/general/low/'] },
      apiKey: key,
    });
    expect(moved.status).toBe(403);

    const read = await admin.request<Token>('GET', `/tokens/${secret.body.id}`, { apiKey: key });
    expect(read.status).toBe(200);
    expect(read.body.containers).toEqual(['/general/high/']);
    expect(read.body.privacy?.impact_level).toBe('high');
    expect(read.body).not.toHaveProperty('data');
  });

  it('a card stays high impact and pci, whoever asks', async () => {
    const admin = env.tenant.client;
    const card = await admin.request<Token>('POST', '/tokens', {
      body: {
        type: 'card',
        data: { number: uniqueCardNumber(), expiration_month: 1, expiration_year: 2033 },
      },
    });
    expect(card.status).toBe(201);
    for (const [privacy, field] of [
      [{ impact_level: 'low' }, 'body.privacy.impact_level'],
      [{ classification: 'general' }, 'body.privacy.classification'],
    ] as const) {
      const refused = await admin.request<{ errors?: Record<string, string[]> }>(
        'PATCH',
        `/tokens/${card.body.id}`,
        { body: { privacy } },
      );
      expect(refused.status).toBe(400);
      expect(Object.keys(refused.body.errors ?? {})).toEqual([field]);
    }
  });
});
