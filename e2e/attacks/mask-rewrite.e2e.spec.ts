// A token's mask is an expression on its own data. The attacker holds a key whose rule masks
// /pci/ and that may also update tokens there (one key), or holds an update-only key beside a
// masked reader such as a support tool (two keys). It rewrites the card's mask to copy the number
// and the CVC, whole or in pieces, and reads the card again through the masked key, hoping for
// the number. Setting a mask needs a rule that reveals the token (403 otherwise), and a mask,
// whoever sets it, sees at most the last four digits of the number and never the CVC.
// In free-form data, a mask that copies a boolean ("{{ data.hiv_positive }}") or the names of an
// object's properties (`json: '$.diagnoses.*~'`, or the object itself) shows data too: booleans
// and nulls are hidden in what a mask sees, and a mask may show no property name it does not spell.
import { beforeAll, describe, expect, it } from 'vitest';
import { uniqueCardNumber } from '../support/cards.ts';
import { useStack } from '../support/stack.ts';

interface Token {
  id: string;
  data?: unknown;
}

describe('attack: a key that may update masked cards rewrites their mask', () => {
  const env = useStack();
  const cvc = '731';
  let number = uniqueCardNumber();
  // A CVC the summary's last four could not show by chance.
  while (number.slice(-4).includes(cvc)) number = uniqueCardNumber();
  const maskedNumber = `${'X'.repeat(number.length - 4)}${number.slice(-4)}`;
  let cardId: string;
  let maskingUpdater: string;
  let updateOnly: string;
  let maskedReader: string;
  const copyingMasks = [
    { number: '{{ data.number }}', cvc: '{{ data.cvc }}' },
    // In pieces, and encoded, so that no piece equals a field.
    { a: '{{ data.number | slice: 0, 8 }}', b: '{{ data.number | slice: 8, 12 }}', c: '{{ data.cvc }}' },
    { number: '{{ data.number | replace: "1", "a" | replace: "2", "b" }}' },
  ];

  const keyOf = async (name: string, rules: object[]) => {
    const created = await env.tenant.client.request<{ key: string }>('POST', '/applications', {
      body: { name, type: 'private', permissions: [], rules },
    });
    expect(created.status).toBe(201);
    return created.body.key;
  };
  const readAs = async (apiKey: string) => {
    const read = await env.tenant.client.request<Token>('GET', `/tokens/${cardId}`, { apiKey });
    expect(read.status).toBe(200);
    return JSON.stringify(read.body.data);
  };

  beforeAll(async () => {
    const created = await env.tenant.client.request<Token>('POST', '/tokens', {
      body: { type: 'card', data: { number, expiration_month: 11, expiration_year: 2039, cvc } },
    });
    expect(created.status).toBe(201);
    cardId = created.body.id;
    maskingUpdater = await keyOf('masked support tool that may update', [
      { container: '/pci/', transform: 'mask', permissions: ['token:read', 'token:update'] },
    ]);
    updateOnly = await keyOf('card updater', [{ container: '/pci/', permissions: ['token:update'] }]);
    maskedReader = await keyOf('masked support tool', [
      { container: '/pci/', transform: 'mask', permissions: ['token:read'] },
    ]);
  });

  it('one key: its rule masks, it rewrites the mask and reads the card again', async () => {
    expect(await readAs(maskingUpdater)).toContain(maskedNumber);
    for (const mask of copyingMasks) {
      const patched = await env.tenant.client.request('PATCH', `/tokens/${cardId}`, {
        body: { mask },
        apiKey: maskingUpdater,
      });
      expect(patched.status, JSON.stringify(mask)).toBe(403);
      const seen = await readAs(maskingUpdater);
      expect(seen).not.toContain(number.slice(0, 8));
      expect(seen).not.toContain(cvc);
    }
    // Back to the type's default is a mask change too.
    expect(
      (
        await env.tenant.client.request('PATCH', `/tokens/${cardId}`, {
          body: { mask: null },
          apiKey: maskingUpdater,
        })
      ).status,
    ).toBe(403);
  });

  it('two keys: an update-only key rewrites the mask, a masked reader reads the card', async () => {
    for (const mask of copyingMasks) {
      const patched = await env.tenant.client.request('PATCH', `/tokens/${cardId}`, {
        body: { mask },
        apiKey: updateOnly,
      });
      expect(patched.status, JSON.stringify(mask)).toBe(403);
      const seen = await readAs(maskedReader);
      expect(seen).not.toContain(number.slice(0, 8));
      expect(seen).not.toContain(cvc);
    }
  });

  it('a mask keeps masking whoever sets it: a revealing key cannot make it copy the number or the CVC', async () => {
    for (const mask of copyingMasks) {
      const patched = await env.tenant.client.request<{ errors?: Record<string, string[]> }>(
        'PATCH',
        `/tokens/${cardId}`,
        { body: { mask } },
      );
      expect(patched.status, JSON.stringify(mask)).toBe(400);
      expect(Object.keys(patched.body.errors ?? {}).some((field) => field.startsWith('body.mask'))).toBe(
        true,
      );
      const seen = await readAs(maskedReader);
      expect(seen).not.toContain(number.slice(0, 8));
      expect(seen).not.toContain(cvc);
    }
    // The default mask still shows the last four.
    expect(await readAs(maskedReader)).toContain(maskedNumber);
  });

  it('a mask keeps masking free-form data: no boolean, no property name it does not spell', async () => {
    const record = await env.tenant.client.request<Token>('POST', '/tokens', {
      body: {
        data: {
          patient: 'Ada Lovelace',
          hiv_positive: true,
          diagnoses: { 'F20.9 schizophrenia': { since: '2019' } },
        },
        containers: ['/health/'],
      },
    });
    expect(record.status).toBe(201);
    const healthReader = await keyOf('masked health reader', [
      { container: '/health/', transform: 'mask', permissions: ['token:read'] },
    ]);
    const nameMask = { patient: '{{ data.patient | reveal_last: 4 }}' };
    const fitting = await env.tenant.client.request('PATCH', `/tokens/${record.body.id}`, {
      body: { mask: nameMask },
    });
    expect(fitting.status, JSON.stringify(fitting.body)).toBe(200);
    const copyingStructure = [
      { hiv: '{{ data.hiv_positive }}' },
      { hiv: 'positive: {{ data.hiv_positive }}' },
      { d: "{{ data | json: '$.diagnoses.*~' }}" },
      { d: '{{ data.diagnoses }}' },
      { d: 'codes {{ data.diagnoses | to_string }}' },
    ];
    for (const mask of copyingStructure) {
      const patched = await env.tenant.client.request<{ errors?: Record<string, string[]> }>(
        'PATCH',
        `/tokens/${record.body.id}`,
        { body: { mask } },
      );
      expect(patched.status, JSON.stringify(mask)).toBe(400);
      expect(Object.keys(patched.body.errors ?? {})).toEqual(['body.mask']);
      const read = await env.tenant.client.request<Token>('GET', `/tokens/${record.body.id}`, {
        apiKey: healthReader,
      });
      expect(read.status).toBe(200);
      const seen = JSON.stringify(read.body.data);
      expect(seen, JSON.stringify(mask)).not.toContain('true');
      expect(seen, JSON.stringify(mask)).not.toContain('F20.9');
      expect(seen, JSON.stringify(mask)).not.toContain('schizophrenia');
    }
    const read = await env.tenant.client.request<Token>('GET', `/tokens/${record.body.id}`, {
      apiKey: healthReader,
    });
    expect(read.body.data).toEqual({ patient: 'XXXXXXXXlace' });
  });
});
