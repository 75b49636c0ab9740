import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tokenStream } from '@tokenvault/tokens';
import { eventually } from './support/eventually.ts';
import { startStack, type TestStack, type TestTenant } from './support/stack.ts';

interface Usage {
  token_report: {
    metrics_by_type: Record<string, { count: number; last_created_at?: string }>;
    included_monthly_active_tokens: number;
    monthly_active_tokens: number;
  };
}

describe('usage report', () => {
  let stack: TestStack;
  let tenant: TestTenant;

  beforeAll(async () => {
    stack = await startStack({ INCLUDED_MONTHLY_ACTIVE_TOKENS: '250' });
    tenant = await stack.createTenant();
  });
  afterAll(async () => stack?.stop());

  const usage = async () => {
    const response = await tenant.client.request<Usage>('GET', '/tenants/self/reports/usage');
    expect(response.status).toBe(200);
    return response.body.token_report;
  };

  it('starts empty, with every type listed and the plan’s allowance', async () => {
    expect(await usage()).toEqual({
      metrics_by_type: { token: { count: 0 }, card: { count: 0 }, bank: { count: 0 } },
      included_monthly_active_tokens: 250,
      monthly_active_tokens: 0,
    });
  });

  it('counts live tokens by type with the last creation time, and monthly active tokens', async () => {
    const card = (number: string) => ({ number, expiration_month: 1, expiration_year: 2031 });
    for (let index = 0; index < 3; index++) await tenant.client.tokens.create({ data: index });
    const firstCard = await tenant.client.tokens.create({ type: 'card', data: card('4242424242424242') });
    const lastCard = await tenant.client.tokens.create({ type: 'card', data: card('5555555555554444') });
    const bank = await tenant.client.tokens.create({
      type: 'bank',
      data: { routing_number: '021000021', account_number: '99999' },
    });
    await tenant.client.tokens.delete(firstCard.id);

    const report = await usage();
    expect(report.metrics_by_type).toEqual({
      token: { count: 3, last_created_at: expect.any(String) },
      card: { count: 1, last_created_at: lastCard.created_at },
      bank: { count: 1, last_created_at: bank.created_at },
    });
    // Six distinct tokens were created this month (the deleted card included).
    expect(report.monthly_active_tokens).toBe(6);
    // Reading tokens already active this month adds nothing.
    await tenant.client.tokens.get(lastCard.id);
    await tenant.client.tokens.get(lastCard.id);
    // A write after the reads: its response waits until the read models are past the reads too.
    await tenant.client.request('PUT', '/tenants/self', { body: { name: 'after the reads' } });
    expect((await usage()).monthly_active_tokens).toBe(6);
  });

  it('a token created last month counts as active this month once it is read', async () => {
    const runtime = stack.service.runtime;
    const id = randomUUID();
    const now = new Date();
    const lastMonth = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 15, 12)).toISOString();
    const position = (
      await runtime.store.append(
        tokenStream(tenant.tenantId, id),
        [
          {
            type: 'TokenCreated',
            data: {
              token_id: id,
              tenant_id: tenant.tenantId,
              type: 'token',
              data_ciphertext: await runtime.vault.encrypt(tenant.tenantId, id, { old: true }),
              containers: ['/general/high/'],
              metadata: {},
              fingerprint: await runtime.vault.fingerprint(tenant.tenantId, 'token', { old: true }),
              created_by: tenant.applicationId,
              created_at: lastMonth,
            },
            metadata: {
              tenant_id: tenant.tenantId,
              actor_id: tenant.applicationId,
              actor_type: 'application',
            },
          },
        ],
        { expectedRevision: 'no_stream' },
      )
    ).position;
    await runtime.consistency.waitFor(position);
    const before = await usage();
    expect(before.metrics_by_type.token!.count).toBe(4);
    expect(before.monthly_active_tokens).toBe(6);

    expect(await tenant.client.tokens.get(id)).toMatchObject({ data: { old: true } });
    await eventually(async () => expect((await usage()).monthly_active_tokens).toBe(7));
  });
});
