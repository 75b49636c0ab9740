import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { useStack } from './support/stack.ts';

/** The formula body of docs/reactors.md's worked example, exactly as the page shows it. */
function documentedFormula(): unknown {
  const page = readFileSync(new URL('../docs/reactors.md', import.meta.url), 'utf8');
  const body = /-d '(\{\n {2}"name": "Last four"[\s\S]*?\n\})'/.exec(page)?.[1];
  if (!body) throw new Error('docs/reactors.md no longer holds the worked example’s formula');
  return JSON.parse(body);
}

describe('docs/reactors.md', () => {
  const env = useStack({ LOG_LEVEL: 'warn' });

  it('runs its worked example as written', async () => {
    const { client } = env.tenant;
    const formula = await client.request<{ id: string }>('POST', '/reactor-formulas', {
      body: documentedFormula(),
    });
    expect(formula.status).toBe(201);
    const reactor = await client.request<{ id: string }>('POST', '/reactors', {
      body: {
        name: 'Visa last four',
        configuration: { accepted_prefix: '4' },
        formula: { id: formula.body.id },
      },
    });
    expect(reactor.status).toBe(201);
    const card = await client.tokens.create({
      type: 'card',
      data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2030 },
    });
    const invoked = await client.request<{ raw: unknown; tokens: { copy: { id: string; type: string } } }>(
      'POST',
      `/reactors/${reactor.body.id}/react`,
      { body: { args: { card: `{{ ${card.id} }}` } } },
    );
    expect(invoked.status).toBe(200);
    expect(invoked.body.raw).toEqual({ last4: '4242' });
    expect(invoked.body.tokens.copy.type).toBe('card');
    expect((await client.tokens.get(invoked.body.tokens.copy.id)).data).toEqual({
      number: '4242424242424242',
      expiration_month: 12,
      expiration_year: 2030,
    });
    const mastercard = await client.tokens.create({
      type: 'card',
      data: { number: '5555555555554444', expiration_month: 1, expiration_year: 2031 },
    });
    const refused = await client.request('POST', `/reactors/${reactor.body.id}/react`, {
      body: { args: { card: `{{${mastercard.id}}}` } },
    });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({
      detail: 'card not accepted',
      errors: { card: ['unsupported brand'] },
    });
  });
});
