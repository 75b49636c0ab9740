import { describe, expect, it } from 'vitest';
import type { TokenView } from '../domain/token.ts';
import { recomputeFromData } from './field-removal.ts';

const tenantId = '0b7a5c3e-1111-4a4a-9b9b-222222222222';
// A vault whose blind values and fingerprints show what they were computed from.
const vault = {
  fingerprint: async (_tenant: string, type: string, subject: unknown) =>
    `fp(${type}:${JSON.stringify(subject)})`,
  searchIndex: async (_tenant: string, value: string) => `blind(${value})`,
};
const withoutCvc = { number: '4242424242424242', expiration_month: 12, expiration_year: 2030 };
const card = (fields: Partial<TokenView>): TokenView => ({
  id: 'tok-1',
  tenant_id: tenantId,
  type: 'card',
  data_ciphertext: 'v1.sealed',
  containers: ['/pci/high/'],
  metadata: {},
  fingerprint: 'fp-before',
  created_by: 'someone',
  created_at: '2026-01-01T00:00:00.000Z',
  ...fields,
});

describe('recomputeFromData: what a token derives, from the data a removal leaves', () => {
  it('an index that gives nothing now indexes nothing; one that fails now is dropped; the others are computed again', async () => {
    const byCvc = { expression: '{{ data.cvc }}', unique: true as const };
    // Gives "true" while the CVC starts with 1, fails once it is gone.
    const failingNow = {
      expression: '{{ data | json: "$.cvc" | slice: 0, 1 | replace: "1", "true" | to_boolean }}',
    };
    const last4 = { expression: '{{ data.number | last4 }}', unique: true as const };
    const recomputed = await recomputeFromData(
      vault,
      card({
        search_indexes: [byCvc, failingNow, last4],
        search_index_values: ['blind(123)', 'blind(true)', 'blind(4242)'],
        unique_index_values: ['blind(123)', 'blind(4242)'],
      }),
      withoutCvc,
    );
    expect(recomputed).toEqual({
      fingerprint: 'fp(card:"4242424242424242")',
      card: expect.objectContaining({ bin: '42424242', last4: '4242' }),
      search_indexes: [byCvc, last4],
      search_index_values: ['blind(4242)'],
      unique_index_values: ['blind(4242)'],
    });
  });

  it('a fingerprint expression that gives nothing or fails is dropped for the type’s fingerprint; one that still gives a value stays', async () => {
    for (const expression of ['{{ data.cvc }}', '{{ data | json: "$.cvc" | card_exp }}']) {
      expect(
        await recomputeFromData(vault, card({ fingerprint_expression: expression }), withoutCvc),
      ).toEqual({
        fingerprint: 'fp(card:"4242424242424242")',
        card: expect.objectContaining({ last4: '4242' }),
      });
    }
    expect(
      await recomputeFromData(
        vault,
        card({ fingerprint_expression: '{{ data.number | last4 }}' }),
        withoutCvc,
      ),
    ).toMatchObject({ fingerprint: 'fp(card:"4242")', fingerprint_expression: '{{ data.number | last4 }}' });
  });

  it('narrowed to the claims the token held, a new unique value stays searchable but is not claimed', async () => {
    const whole = { expression: '{{ data | json: "$" }}', unique: true as const };
    const recomputed = await recomputeFromData(
      vault,
      card({
        search_indexes: [whole],
        search_index_values: ['blind(old)'],
        unique_index_values: ['blind(old)'],
      }),
      withoutCvc,
      ['blind(old)'],
    );
    expect(recomputed.search_index_values).toEqual([`blind(${JSON.stringify(withoutCvc)})`]);
    expect(recomputed).not.toHaveProperty('unique_index_values');
  });
});
