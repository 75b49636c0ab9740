import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Page } from '@tokenvault/sdk';
import { type TestTenant, eventCount, useStack } from './support/stack.ts';

interface Token {
  id: string;
  type: string;
  data?: unknown;
  containers: string[];
}

const card = { number: '4242424242424242', expiration_month: 12, expiration_year: 2030 };

describe('token associations', () => {
  const env = useStack({ LOG_LEVEL: 'warn' });

  const children = (
    client: TestTenant['client'],
    parent: string,
    query: Record<string, string | number | (string | number)[]> = {},
  ) => client.request<Page<Token>>('GET', `/tokens/${parent}/children`, { query: { size: 100, ...query } });

  it('matches a plain in-memory model over random sequences of operations', async () => {
    type Operation =
      | { kind: 'associate'; parent: number; child: number }
      | { kind: 'dissociate'; parent: number; child: number }
      | { kind: 'createChild'; parent: number }
      | { kind: 'delete'; token: number };
    const index = fc.nat({ max: 7 });
    const operation: fc.Arbitrary<Operation> = fc.oneof(
      {
        weight: 4,
        arbitrary: fc.record({ kind: fc.constant('associate' as const), parent: index, child: index }),
      },
      {
        weight: 2,
        arbitrary: fc.record({ kind: fc.constant('dissociate' as const), parent: index, child: index }),
      },
      { weight: 2, arbitrary: fc.record({ kind: fc.constant('createChild' as const), parent: index }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('delete' as const), token: index }) },
    );

    await fc.assert(
      fc.asyncProperty(fc.array(operation, { minLength: 1, maxLength: 15 }), async (operations) => {
        const ids: string[] = [];
        for (let count = 0; count < 4; count++)
          ids.push((await env.tenant.client.tokens.create({ data: count })).id);
        const alive = new Set(ids);
        const associations = new Set<string>(); // "parent child"
        const pick = (position: number) => ids[position % ids.length]!;

        for (const step of operations) {
          let expected: number;
          let response: { status: number; body: unknown };
          if (step.kind === 'associate' || step.kind === 'dissociate') {
            const [parent, child] = [pick(step.parent), pick(step.child)];
            const key = `${parent} ${child}`;
            if (!alive.has(parent) || !alive.has(child)) expected = 404;
            else if (step.kind === 'associate') expected = parent === child ? 400 : 204;
            else expected = associations.has(key) ? 204 : 404;
            response = await env.tenant.client.request(
              step.kind === 'associate' ? 'POST' : 'DELETE',
              `/tokens/${parent}/children/${child}`,
            );
            if (expected === 204 && step.kind === 'associate') associations.add(key);
            if (expected === 204 && step.kind === 'dissociate') associations.delete(key);
          } else if (step.kind === 'createChild') {
            const parent = pick(step.parent);
            expected = alive.has(parent) ? 201 : 404;
            response = await env.tenant.client.request('POST', `/tokens/${parent}/children`, {
              body: { data: 'child' },
            });
            if (expected === 201) {
              const child = (response.body as Token).id;
              ids.push(child);
              alive.add(child);
              associations.add(`${parent} ${child}`);
            }
          } else {
            const token = pick(step.token);
            expected = alive.has(token) ? 204 : 404;
            response = await env.tenant.client.request('DELETE', `/tokens/${token}`);
            if (expected === 204) {
              alive.delete(token);
              for (const key of [...associations])
                if (key.split(' ').includes(token)) associations.delete(key);
            }
          }
          expect(response.status, JSON.stringify(step)).toBe(expected);

          for (const parent of ids) {
            const listed = await children(env.tenant.client, parent);
            if (!alive.has(parent)) {
              expect(listed.status).toBe(404);
              continue;
            }
            const modelled = [...associations]
              .filter((key) => key.startsWith(`${parent} `))
              .map((key) => key.split(' ')[1]!);
            expect(listed.body.data.map((token) => token.id).sort()).toEqual(modelled.sort());
            expect(listed.body.pagination.total_items).toBe(modelled.length);
          }
        }
      }),
      { numRuns: 30 },
    );
  });

  it('a bi-directional association is two associations, and both directions list', async () => {
    const a = await env.tenant.client.tokens.create({ data: 'a' });
    const b = await env.tenant.client.tokens.create({ data: 'b' });
    expect((await env.tenant.client.request('POST', `/tokens/${a.id}/children/${b.id}`)).status).toBe(204);
    expect((await env.tenant.client.request('POST', `/tokens/${b.id}/children/${a.id}`)).status).toBe(204);
    expect((await children(env.tenant.client, a.id)).body.data.map((token) => token.id)).toEqual([b.id]);
    expect((await children(env.tenant.client, b.id)).body.data.map((token) => token.id)).toEqual([a.id]);
    expect((await children(env.tenant.client, a.id)).body.data[0]).toMatchObject({ data: 'b' });
  });

  it('an association that exists is a success with no new event; a token is not its own child', async () => {
    const parent = await env.tenant.client.tokens.create({ data: 'p' });
    const child = await env.tenant.client.tokens.create({ data: 'c' });
    await env.tenant.client.request('POST', `/tokens/${parent.id}/children/${child.id}`);
    const before = await eventCount(env.stack);
    expect(
      (await env.tenant.client.request('POST', `/tokens/${parent.id}/children/${child.id}`)).status,
    ).toBe(204);
    expect(await eventCount(env.stack)).toBe(before);
    const self = await env.tenant.client.request<{ errors: Record<string, string[]> }>(
      'POST',
      `/tokens/${parent.id}/children/${parent.id}`,
    );
    expect(self.status).toBe(400);
    expect(Object.keys(self.body.errors)).toEqual(['path.child_id']);
  });

  it('50 concurrent creates of one association all answer 204, and it is recorded once', async () => {
    const parent = await env.tenant.client.tokens.create({ data: 'p' });
    const child = await env.tenant.client.tokens.create({ data: 'c' });
    const answers = await Promise.all(
      Array.from({ length: 50 }, () =>
        env.tenant.client.request('POST', `/tokens/${parent.id}/children/${child.id}`),
      ),
    );
    expect(answers.map((answer) => answer.status)).toEqual(Array.from({ length: 50 }, () => 204));
    const again = await Promise.all(
      Array.from({ length: 50 }, () =>
        env.tenant.client.request('POST', `/tokens/${parent.id}/children/${child.id}`),
      ),
    );
    expect(again.map((answer) => answer.status)).toEqual(Array.from({ length: 50 }, () => 204));
    const listed = await children(env.tenant.client, parent.id);
    expect(listed.body.data.map((token) => token.id)).toEqual([child.id]);
  });

  it('creates a child in one event, answers without data, and records the associations a deletion ends', async () => {
    const parent = await env.tenant.client.tokens.create({ data: 'parent' });
    const grandparent = await env.tenant.client.tokens.create({ data: 'grandparent' });
    await env.tenant.client.request('POST', `/tokens/${grandparent.id}/children/${parent.id}`);
    const before = await eventCount(env.stack);
    const child = await env.tenant.client.request<Token>('POST', `/tokens/${parent.id}/children`, {
      body: { type: 'card', data: card, metadata: { k: 'v' } },
    });
    expect(child.status).toBe(201);
    expect(child.body).not.toHaveProperty('data');
    expect(child.body).toMatchObject({ type: 'card', containers: ['/pci/high/'], metadata: { k: 'v' } });
    expect(await eventCount(env.stack)).toBe(before + 1);
    expect((await children(env.tenant.client, parent.id)).body.data).toEqual([
      expect.objectContaining({ id: child.body.id, data: card }),
    ]);

    await env.tenant.client.tokens.delete(parent.id);
    const deletion = await env.stack.service.runtime.ownerPool.query<{
      data: { parent_ids: string[]; child_ids: string[] };
    }>(`SELECT data FROM es_events WHERE event_type = 'TokenDeleted' AND data->>'token_id' = $1`, [
      parent.id,
    ]);
    expect(deletion.rows[0]?.data).toMatchObject({
      parent_ids: [grandparent.id],
      child_ids: [child.body.id],
    });
    expect((await children(env.tenant.client, grandparent.id)).body.data).toEqual([]);
    expect((await env.tenant.client.request('GET', `/tokens/${child.body.id}`)).status).toBe(200);
  });

  it('pages 45 children by 20 (20, 20, 5) and combines filters with pages', async () => {
    const parent = await env.tenant.client.tokens.create({ data: 'many' });
    const created: Token[] = [];
    for (let count = 0; count < 45; count++) {
      const body = count % 3 === 0 ? { type: 'card' as const, data: card } : { data: count };
      created.push(
        (await env.tenant.client.request<Token>('POST', `/tokens/${parent.id}/children`, { body })).body,
      );
    }
    const pages = await Promise.all(
      [1, 2, 3, 4].map((page) => children(env.tenant.client, parent.id, { page, size: 20 })),
    );
    expect(pages.map((page) => page.body.data.length)).toEqual([20, 20, 5, 0]);
    for (const [index, page] of pages.entries()) {
      expect(page.body.pagination).toEqual({
        total_items: 45,
        page_number: index + 1,
        page_size: 20,
        total_pages: 3,
      });
    }
    const listed = pages.flatMap((page) => page.body.data.map((token) => token.id));
    expect(new Set(listed)).toEqual(new Set(created.map((token) => token.id)));
    // Stable: the same order on every read.
    const again = await Promise.all(
      [1, 2, 3].map((page) => children(env.tenant.client, parent.id, { page, size: 20 })),
    );
    expect(again.flatMap((page) => page.body.data.map((token) => token.id))).toEqual(listed);

    const cards = await children(env.tenant.client, parent.id, { type: 'card', size: 10, page: 2 });
    expect(cards.body.pagination).toMatchObject({ total_items: 15, total_pages: 2 });
    expect(cards.body.data).toHaveLength(5);
    expect(cards.body.data.every((token) => token.type === 'card')).toBe(true);
    const someIds = created.slice(0, 6).map((token) => token.id);
    const byIdAndType = await children(env.tenant.client, parent.id, { id: someIds, type: ['card', 'bank'] });
    expect(byIdAndType.body.data.map((token) => token.id).sort()).toEqual([someIds[0]!, someIds[3]!].sort());
  });

  it('checks permissions on each route, and container rules decide what a key sees and touches', async () => {
    const parent = await env.tenant.client.tokens.create({ data: 'parent', containers: ['/pci/'] });
    const pciChild = await env.tenant.client.tokens.create({ type: 'card', data: card });
    const generalChild = await env.tenant.client.tokens.create({ data: 'general' });
    await env.tenant.client.request('POST', `/tokens/${parent.id}/children/${pciChild.id}`);
    await env.tenant.client.request('POST', `/tokens/${parent.id}/children/${generalChild.id}`);

    const none = env.tenant.client.withKey(
      (
        await env.tenant.client.applications.create({
          name: 'no tokens',
          type: 'management',
          permissions: ['log:read'],
        })
      ).key,
    );
    expect((await none.request('POST', `/tokens/${parent.id}/children/${pciChild.id}`)).status).toBe(403);
    expect((await none.request('DELETE', `/tokens/${parent.id}/children/${pciChild.id}`)).status).toBe(403);
    expect((await none.request('POST', `/tokens/${parent.id}/children`, { body: { data: 1 } })).status).toBe(
      403,
    );
    expect((await none.request('GET', `/tokens/${parent.id}/children`)).status).toBe(403);

    const pciOnly = env.tenant.client.withKey(
      (
        await env.tenant.client.applications.create({
          name: 'pci only',
          type: 'private',
          rules: [{ container: '/pci/', permissions: ['token:read', 'token:create', 'token:delete'] }],
        })
      ).key,
    );
    const listed = await children(pciOnly, parent.id);
    expect(listed.body.data.map((token) => token.id)).toEqual([pciChild.id]);
    expect(listed.body.pagination.total_items).toBe(1);
    expect((await pciOnly.request('POST', `/tokens/${parent.id}/children/${generalChild.id}`)).status).toBe(
      403,
    );
    expect((await pciOnly.request('DELETE', `/tokens/${parent.id}/children/${generalChild.id}`)).status).toBe(
      403,
    );
    expect(
      (await pciOnly.request('POST', `/tokens/${parent.id}/children`, { body: { data: 'x' } })).status,
    ).toBe(403);
    expect(
      (await pciOnly.request('POST', `/tokens/${parent.id}/children`, { body: { type: 'card', data: card } }))
        .status,
    ).toBe(201);
    expect((await pciOnly.request('DELETE', `/tokens/${parent.id}/children/${pciChild.id}`)).status).toBe(
      204,
    );
    expect((await children(env.tenant.client, parent.id)).body.data.map((token) => token.id)).toContain(
      generalChild.id,
    );
  });

  it('another env.tenant’s parent or child is a 404 on every route', async () => {
    const other = await env.stack.createTenant();
    const theirs = await other.client.tokens.create({ data: 'theirs' });
    const mine = await env.tenant.client.tokens.create({ data: 'mine' });
    for (const [method, path, body] of [
      ['POST', `/tokens/${mine.id}/children/${theirs.id}`, undefined],
      ['POST', `/tokens/${theirs.id}/children/${mine.id}`, undefined],
      ['DELETE', `/tokens/${mine.id}/children/${theirs.id}`, undefined],
      ['DELETE', `/tokens/${theirs.id}/children/${mine.id}`, undefined],
      ['POST', `/tokens/${theirs.id}/children`, { data: 1 }],
      ['GET', `/tokens/${theirs.id}/children`, undefined],
    ] as const) {
      const response = await env.tenant.client.request(method, path, body === undefined ? {} : { body });
      expect(response.status, `${method} ${path}`).toBe(404);
    }
    expect((await children(other.client, theirs.id)).body.data).toEqual([]);
  });
});
