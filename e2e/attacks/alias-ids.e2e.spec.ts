// An alias id looks like the data it stands for (docs/search.md, Alias ids), and an id is public:
// it shows in URLs, logs, events and lists. The attackers: (a) anyone who sees a card token's
// alias and wants the digits the alias replaced; (b) anyone holding aliases of one value (an
// export, a legacy table) who wants to link them, as a deterministic alias would let them; (c)
// another tenant probing the id space for the caller's aliases or values.
import { beforeAll, describe, expect, it } from 'vitest';
import { useStack, type TestTenant } from '../support/stack.ts';

// BIN 424242, middle digits 987653 (in neither the BIN nor the last four), last four 1881.
const card = { number: '4242429876531881', expiration_month: 12, expiration_year: 2031 };
const middle = card.number.slice(6, -4);
const ssn = '536-22-8431';
const draws = 20;

describe('attack: alias ids', () => {
  const env = useStack({ LOG_LEVEL: 'warn' });
  let rival: TestTenant;
  const cardAliases: string[] = [];
  const ssnAliases: string[] = [];

  const create = async (tenant: TestTenant, body: Record<string, unknown>) => {
    const created = await tenant.client.request<{ id: string }>('POST', '/tokens', { body });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body.id;
  };

  beforeAll(async () => {
    rival = await env.stack.createTenant('Rival');
    for (let draw = 0; draw < draws; draw++) {
      cardAliases.push(
        await create(env.tenant, { type: 'card', data: card, id: '{{ data.number | alias_card }}' }),
      );
      ssnAliases.push(
        await create(env.tenant, {
          type: 'social_security_number',
          data: ssn,
          id: '{{ data | alias_preserve_format }}',
        }),
      );
    }
  });

  it('(a) a card alias keeps the BIN and last four only: it never equals the number nor holds its middle digits', () => {
    for (const alias of cardAliases) {
      expect(alias).toMatch(/^424242\d{6}1881$/);
      expect(alias).not.toBe(card.number);
      expect(alias).not.toContain(middle);
    }
    for (const alias of ssnAliases) {
      expect(alias).toMatch(/^\d{3}-\d{2}-\d{4}$/);
      expect(alias).not.toBe(ssn);
    }
  });

  it('(b) aliases of one value are unrelated: every create draws anew, no digit position stays fixed', () => {
    expect(new Set(cardAliases).size).toBe(draws);
    expect(new Set(ssnAliases).size).toBe(draws);
    // A position that kept the data's digit (or any one digit) would show one value over 20 draws.
    for (let position = 6; position < 12; position++) {
      expect(new Set(cardAliases.map((alias) => alias[position])).size).toBeGreaterThan(1);
    }
  });

  it('(c) another tenant shares no id space with the caller: its aliases and its probes learn nothing', async () => {
    const probed = cardAliases[0]!;
    // The caller's alias is no token of the rival's: a 404 as for any unknown id, not a 403.
    const read = await rival.client.request('GET', `/tokens/${probed}`);
    expect(read.status).toBe(404);
    expect((await rival.client.request('DELETE', `/tokens/${probed}`)).status).toBe(404);
    // Creating that very id is no collision for the rival (a 409 would tell it the id is taken).
    const theirs = await create(rival, { type: 'token', data: 'rival data', id: probed });
    expect(theirs).toBe(probed);
    // The rival's alias of the same number is drawn as anyone's, and its read by the probed id
    // gives its own token, never the caller's.
    const rivalAlias = await create(rival, {
      type: 'card',
      data: card,
      id: '{{ data.number | alias_card }}',
    });
    expect(rivalAlias).toMatch(/^424242\d{6}1881$/);
    const rivalRead = await rival.client.request<{ data: unknown }>('GET', `/tokens/${probed}`);
    expect(rivalRead.body.data).toBe('rival data');
    // The caller's token by that id is still its card.
    const mine = await env.tenant.client.request<{ data: unknown }>('GET', `/tokens/${probed}`);
    expect(mine.body.data).toMatchObject({ number: card.number });
  });
});
