import { describe, expect, it } from 'vitest';
import type { Page } from '@tokenvault/sdk';
import { eventually } from '@tokenvault/platform/testing';
import { type TestTenant, useStack } from './support/stack.ts';

interface Log {
  tenant_id: string;
  actor_id?: string;
  actor_type?: string;
  entity_type: string;
  entity_id: string;
  operation: string;
  message: string;
  created_at: string;
}
type LogPage = Page<Log> & { pagination: { next: string | null } };

const card = { number: '4242424242424242', expiration_month: 12, expiration_year: 2030 };

describe('audit log', () => {
  const env = useStack();

  const logs = async (client: TestTenant['client'], query: Record<string, string | number | undefined>) => {
    const response = await client.request<LogPage>('GET', '/logs', { query });
    expect(response.status).toBe(200);
    return response.body;
  };

  it('has one row for every write and every token read, with entity, operation and actor', async () => {
    const app = env.tenant.applicationId;
    const token = await env.tenant.client.tokens.create({ data: 'plain' });
    const cardToken = await env.tenant.client.tokens.create({ type: 'card', data: card });
    const bank = await env.tenant.client.tokens.create({
      type: 'bank',
      data: { routing_number: '011000015', account_number: '123456' },
    });
    await env.tenant.client.tokens.get(cardToken.id);
    await env.tenant.client.tokens.get(cardToken.id);
    await env.tenant.client.tokens.delete(bank.id);
    const created = await env.tenant.client.applications.create({
      name: 'x',
      type: 'private',
      permissions: ['token:read'],
    });
    await env.tenant.client.applications.update(created.id, { name: 'y', permissions: [] });
    await env.tenant.client.applications.delete(created.id);
    await env.tenant.client.request('PUT', '/tenants/self', { body: { name: 'Renamed' } });

    const expected: [string, string, string, string][] = [
      ['tenant', env.tenant.tenantId, 'create', 'Tenant created'],
      ['user', env.tenant.ownerUserId, 'create', 'User registered'],
      ['application', app, 'create', 'Application created'],
      ['token', token.id, 'create', 'Token created'],
      ['card', cardToken.id, 'create', 'Token created'],
      ['card', cardToken.id, 'read', 'Token retrieved'],
      ['card', cardToken.id, 'read', 'Token retrieved'],
      ['bank', bank.id, 'create', 'Token created'],
      ['bank', bank.id, 'delete', 'Token deleted'],
      ['application', created.id, 'create', 'Application created'],
      ['application', created.id, 'update', 'Application updated'],
      ['application', created.id, 'delete', 'Application deleted'],
      ['tenant', env.tenant.tenantId, 'update', 'Tenant updated'],
    ];
    const all = await eventually(async () => {
      const page = await logs(env.tenant.client, { size: 100 });
      expect(page.data.filter((log) => log.operation === 'read')).toHaveLength(2);
      return page.data;
    });
    const rows = all.filter((log) => log.entity_type !== 'tenant_member');
    expect(rows.map((log) => [log.entity_type, log.entity_id, log.operation, log.message]).sort()).toEqual(
      expected.sort(),
    );
    expect(all.filter((log) => log.entity_type === 'tenant_member')).toHaveLength(1);
    for (const log of rows.filter(
      (row) =>
        row.entity_id !== env.tenant.ownerUserId &&
        !(row.entity_type === 'tenant' && row.operation === 'create'),
    )) {
      if (log.entity_id === app && log.operation === 'create') continue; // bootstrap: acted by the owner
      expect(log).toMatchObject({ tenant_id: env.tenant.tenantId, actor_id: app, actor_type: 'application' });
    }
    expect(all.find((log) => log.entity_id === app)).toMatchObject({
      actor_id: env.tenant.ownerUserId,
      actor_type: 'user',
    });
    // Newest first.
    const times = all.map((log) => Date.parse(log.created_at));
    expect([...times].sort((a, b) => b - a)).toEqual(times);
  });

  it('filters by entity and by dates: start_date is inclusive, end_date exclusive', async () => {
    const token = await env.tenant.client.tokens.create({ data: 'dated' });
    const [row] = (await eventually(async () => {
      const page = await logs(env.tenant.client, { entity_id: token.id });
      expect(page.data).toHaveLength(1);
      return page.data;
    })) as [Log];
    const at = row.created_at;
    expect((await logs(env.tenant.client, { entity_id: token.id, start_date: at })).data).toHaveLength(1);
    expect((await logs(env.tenant.client, { entity_id: token.id, end_date: at })).data).toHaveLength(0);
    const justAfter = new Date(Date.parse(at) + 1).toISOString();
    expect((await logs(env.tenant.client, { entity_id: token.id, end_date: justAfter })).data).toHaveLength(
      1,
    );
    expect((await logs(env.tenant.client, { entity_id: token.id, start_date: justAfter })).data).toHaveLength(
      0,
    );
    const day = at.slice(0, 10);
    expect((await logs(env.tenant.client, { entity_id: token.id, start_date: day })).data).toHaveLength(1);
    expect((await logs(env.tenant.client, { entity_type: 'token', entity_id: token.id })).data).toHaveLength(
      1,
    );
    expect((await logs(env.tenant.client, { entity_type: 'card', entity_id: token.id })).data).toHaveLength(
      0,
    );
  });

  it('pages by cursor across 250 rows, each row once, and past the end is empty', async () => {
    const fresh = await env.stack.createTenant();
    let next = 0;
    await Promise.all(
      Array.from({ length: 10 }, async () => {
        while (next < 250) {
          next++;
          await fresh.client.tokens.create({ type: 'card', data: card });
        }
      }),
    );
    const seen: string[] = [];
    let cursor: string | null | undefined;
    let pages = 0;
    do {
      const page = await logs(fresh.client, {
        entity_type: 'card',
        size: 40,
        ...(cursor ? { start: cursor } : {}),
      });
      seen.push(...page.data.map((log) => log.entity_id));
      cursor = page.pagination.next;
      pages++;
    } while (cursor);
    expect(pages).toBe(7);
    expect(seen).toHaveLength(250);
    expect(new Set(seen).size).toBe(250);

    const byPage = await logs(fresh.client, { entity_type: 'card', size: 100, page: 3 });
    expect(byPage.data).toHaveLength(50);
    expect(byPage.pagination).toMatchObject({
      total_items: 250,
      page_number: 3,
      page_size: 100,
      total_pages: 3,
      next: null,
    });
    expect((await logs(fresh.client, { entity_type: 'card', size: 100, page: 4 })).data).toEqual([]);
  });

  it('refuses bad dates, sizes and cursors with the field named', async () => {
    for (const [query, field] of [
      [{ start_date: 'yesterday' }, 'query.start_date'],
      [{ end_date: '2026-13-01' }, 'query.end_date'],
      [{ size: 0 }, 'query.size'],
      [{ size: 101 }, 'query.size'],
      [{ start: 'not-a-cursor' }, 'query.start'],
      [{ page: 2, start: 'x' }, 'query.start'],
    ] as const) {
      const response = await env.tenant.client.request<{ errors: Record<string, string[]> }>('GET', '/logs', {
        query,
      });
      expect(response.status, JSON.stringify(query)).toBe(400);
      expect(Object.keys(response.body.errors)).toContain(field);
    }
  });

  it('lists the entity types it logs', async () => {
    const response = await env.tenant.client.request<{ value: string; display_name: string }[]>(
      'GET',
      '/logs/entity-types',
    );
    expect(response.status).toBe(200);
    expect(response.body.map((type) => type.value)).toEqual(
      expect.arrayContaining([
        'token',
        'card',
        'bank',
        'application',
        'tenant',
        'tenant_member',
        'tenant_invitation',
        'reactor',
        'reactor_formula',
      ]),
    );
    for (const type of response.body) expect(type.display_name).toEqual(expect.any(String));
  });

  it('never shows another env.tenant’s logs, whatever the filters', async () => {
    const other = await env.stack.createTenant();
    const mine = await env.tenant.client.tokens.create({ data: 'mine' });
    await eventually(async () =>
      expect((await logs(env.tenant.client, { entity_id: mine.id })).data).toHaveLength(1),
    );
    for (const query of [
      {},
      { entity_id: mine.id },
      { entity_type: 'token' },
      { start_date: '2000-01-01' },
    ]) {
      const page = await logs(other.client, { ...query, size: 100 });
      // Its own bootstrap rows are there (so the check below is not on an empty page).
      if (!('entity_id' in query) && !('entity_type' in query)) expect(page.data.length).toBeGreaterThan(0);
      expect(page.data.every((log) => log.tenant_id === other.tenantId)).toBe(true);
      expect(page.data.some((log) => log.entity_id === mine.id)).toBe(false);
    }
  });
});
