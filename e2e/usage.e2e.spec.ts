import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { tokenStream } from '@tokenvault/tokens';
import { eventually } from '@tokenvault/platform/testing';
import { useStack } from './support/stack.ts';
import { createReactor, react } from './support/reactors.ts';

interface Usage {
  token_report: {
    metrics_by_type: Record<string, { count: number; last_created_at?: string }>;
    included_monthly_active_tokens: number;
    monthly_active_tokens: number;
    daily_created_by_type: { date: string; counts: Record<string, number> }[];
  };
}

/** The types of docs/token-types.md beyond token, card and bank, none created here. */
const newTypesUnused = {
  card_number: { count: 0 },
  us_bank_account_number: { count: 0 },
  us_bank_routing_number: { count: 0 },
  social_security_number: { count: 0 },
  employer_id_number: { count: 0 },
};

describe('usage report', () => {
  const env = useStack({ INCLUDED_MONTHLY_ACTIVE_TOKENS: '250' });

  const usage = async () => {
    const response = await env.tenant.client.request<Usage>('GET', '/tenants/self/reports/usage');
    expect(response.status).toBe(200);
    return response.body.token_report;
  };

  it('starts empty, with every type listed and the plan’s allowance', async () => {
    const { daily_created_by_type: daily, ...totals } = await usage();
    expect(totals).toEqual({
      metrics_by_type: { token: { count: 0 }, card: { count: 0 }, bank: { count: 0 }, ...newTypesUnused },
      included_monthly_active_tokens: 250,
      monthly_active_tokens: 0,
    });
    // The last 30 days, today (UTC) last, every type at 0.
    const noneOfEachType = Object.fromEntries(
      Object.keys({ token: 0, card: 0, bank: 0, ...newTypesUnused }).map((type) => [type, 0]),
    );
    expect(daily).toHaveLength(30);
    expect(daily.at(-1)!.date).toBe(new Date().toISOString().slice(0, 10));
    for (const day of daily) expect(day.counts).toEqual(noneOfEachType);
  });

  it('counts live tokens by type with the last creation time, and monthly active tokens', async () => {
    const card = (number: string) => ({ number, expiration_month: 1, expiration_year: 2031 });
    for (let index = 0; index < 3; index++) await env.tenant.client.tokens.create({ data: index });
    const firstCard = await env.tenant.client.tokens.create({ type: 'card', data: card('4242424242424242') });
    const lastCard = await env.tenant.client.tokens.create({ type: 'card', data: card('5555555555554444') });
    const bank = await env.tenant.client.tokens.create({
      type: 'bank',
      data: { routing_number: '021000021', account_number: '99999' },
    });
    await env.tenant.client.tokens.delete(firstCard.id);

    const report = await usage();
    expect(report.metrics_by_type).toEqual({
      token: { count: 3, last_created_at: expect.any(String) },
      card: { count: 1, last_created_at: lastCard.created_at },
      bank: { count: 1, last_created_at: bank.created_at },
      ...newTypesUnused,
    });
    // Six distinct tokens were created this month (the deleted card included).
    expect(report.monthly_active_tokens).toBe(6);
    // Reading and updating tokens created this month adds nothing.
    await env.tenant.client.tokens.get(lastCard.id);
    await env.tenant.client.tokens.get(lastCard.id);
    const update = await env.tenant.client.request('PATCH', `/tokens/${bank.id}`, {
      body: { metadata: { updated: 'yes' } },
    });
    expect(update.status).toBe(200);
    // A write after the reads: its response waits until the read models are past the reads too.
    await env.tenant.client.request('PUT', '/tenants/self', { body: { name: 'after the reads' } });
    expect((await usage()).monthly_active_tokens).toBe(6);
  });

  /** A token whose creation is dated the 15th of last month: active this month only once used. */
  const tokenCreatedLastMonth = async (data: unknown) => {
    const runtime = env.stack.service.runtime;
    const id = randomUUID();
    const now = new Date();
    const lastMonth = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 15, 12)).toISOString();
    const position = (
      await runtime.store.append(
        tokenStream(env.tenant.tenantId, id),
        [
          {
            type: 'TokenCreated',
            data: {
              token_id: id,
              tenant_id: env.tenant.tenantId,
              type: 'token',
              data_ciphertext: await runtime.vault.encrypt(env.tenant.tenantId, id, data),
              containers: ['/general/high/'],
              metadata: {},
              fingerprint: await runtime.vault.fingerprint(env.tenant.tenantId, 'token', data),
              created_by: env.tenant.applicationId,
              created_at: lastMonth,
            },
            metadata: {
              tenant_id: env.tenant.tenantId,
              actor_id: env.tenant.applicationId,
              actor_type: 'application',
            },
          },
        ],
        { expectedRevision: 'no_stream' },
      )
    ).position;
    await runtime.consistency.waitFor(position);
    return id;
  };

  it('a token created last month counts as active this month once it is read', async () => {
    const id = await tokenCreatedLastMonth({ old: true });
    const before = await usage();
    expect(before.metrics_by_type.token!.count).toBe(4);
    expect(before.monthly_active_tokens).toBe(6);

    expect(await env.tenant.client.tokens.get(id)).toMatchObject({ data: { old: true } });
    await eventually(async () => expect((await usage()).monthly_active_tokens).toBe(7));
  });

  it('a token created last month counts as active this month once, when it is updated and then read', async () => {
    const id = await tokenCreatedLastMonth({ old: 'and updated' });
    const before = (await usage()).monthly_active_tokens;
    const update = await env.tenant.client.request('PATCH', `/tokens/${id}`, {
      body: { metadata: { updated: 'yes' } },
    });
    expect(update.status).toBe(200);
    await eventually(async () => expect((await usage()).monthly_active_tokens).toBe(before + 1));
    await env.tenant.client.tokens.get(id);
    await env.tenant.client.request('PUT', '/tenants/self', { body: { name: 'after the read' } });
    expect((await usage()).monthly_active_tokens).toBe(before + 1);
  });

  it('a token created last month counts as active once a reactor detokenizes it, even if the run fails', async () => {
    const id = await tokenCreatedLastMonth({ used: 'by a reactor' });
    const before = (await usage()).monthly_active_tokens;
    const reactor = await createReactor(env.tenant, {
      code: "module.exports = async (req) => { throw new BadRequestError('refused ' + req.args.value.used); };",
      request_parameters: [{ name: 'value', type: 'object' }],
    });
    const refused = await react(env.tenant, reactor, { value: `{{${id}}}` });
    // The code saw the token's data, so the token was opened for it.
    expect(refused.status).toBe(400);
    expect(refused.body.detail).toBe('refused by a reactor');
    await eventually(async () => expect((await usage()).monthly_active_tokens).toBe(before + 1));
  });
});
