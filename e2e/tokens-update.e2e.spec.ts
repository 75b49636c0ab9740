import { describe, expect, it } from 'vitest';
import { eventually } from '@tokenvault/platform/testing';
import { eventCount, useStack, type TestTenant } from './support/stack.ts';

const card = { number: '4242424242424242', expiration_month: 12, expiration_year: 2030, cvc: '123' };
const mergePatchJson = { 'content-type': 'application/merge-patch+json' };

interface Token {
  id: string;
  type: string;
  data?: unknown;
  containers: string[];
  metadata: Record<string, string>;
  fingerprint?: string;
  expires_at?: string;
  modified_by?: string;
  modified_at?: string;
}
interface Problem {
  errors?: Record<string, string[]>;
  detail?: string;
}
interface Log {
  entity_type: string;
  entity_id: string;
  operation: string;
  message: string;
}
interface TokenPage {
  pagination: {
    total_items: number | null;
    page_number: number | null;
    page_size: number;
    total_pages: number | null;
    next: string | null;
  };
  data: Token[];
}

const keyWith = async (
  tenant: TestTenant,
  grants: Pick<Parameters<TestTenant['client']['applications']['create']>[0], 'permissions' | 'rules'>,
) =>
  tenant.client.withKey(
    (
      await tenant.client.applications.create({
        name: 'scoped',
        type: 'private',
        ...grants,
      })
    ).key,
  );

describe('PATCH /tokens/{id}', () => {
  const env = useStack();
  const patch = (id: string, body: unknown, headers: Record<string, string> = mergePatchJson) =>
    env.tenant.client.request<Token & Problem>('PATCH', `/tokens/${id}`, { body, headers });
  const read = async (id: string) => (await env.tenant.client.request<Token>('GET', `/tokens/${id}`)).body;

  it('identical data patches at once all succeed: each merges into the data as it then is', async () => {
    const created = await env.tenant.client.request<Token>('POST', '/tokens', {
      body: { type: 'card', data: card },
    });
    const before = await eventCount(env.stack);
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => patch(created.body.id, { data: { cvc: '999' } })),
    );
    expect(answers.map((answer) => answer.status)).toEqual(Array(10).fill(200));
    // The first changes the data; the others find it equal and append nothing.
    expect(await eventCount(env.stack)).toBe(before + 1);
    expect((await read(created.body.id)).data).toEqual({ ...card, cvc: '999' });
  });

  it('merge-patches metadata (null deletes a key) and object data, in either content type', async () => {
    const created = await env.tenant.client.tokens.create({
      data: { a: 1, nested: { x: 1, y: 2 } },
      metadata: { keep: '1', drop: '2' },
    });
    const updated = await patch(created.id, {
      metadata: { drop: null, added: '3' },
      data: { nested: { y: null, z: 3 } },
    });
    expect(updated.status).toBe(200);
    expect(updated.body).not.toHaveProperty('data');
    expect(updated.body).toMatchObject({ id: created.id, metadata: { keep: '1', added: '3' } });
    expect(updated.body.modified_by).toBe(env.tenant.applicationId);
    expect(updated.body.modified_at).toBeDefined();
    expect(updated.body.fingerprint).not.toBe(created.fingerprint);
    expect(await read(created.id)).toMatchObject({
      data: { a: 1, nested: { x: 1, z: 3 } },
      metadata: { keep: '1', added: '3' },
      modified_by: env.tenant.applicationId,
    });

    // application/json is a merge patch too; data that is not an object is replaced.
    const replaced = await patch(created.id, { data: 'plain' }, { 'content-type': 'application/json' });
    expect(replaced.status).toBe(200);
    expect((await read(created.id)).data).toBe('plain');
    expect((await patch(created.id, { data: ['a', 'b'] })).status).toBe(200);
    expect((await read(created.id)).data).toEqual(['a', 'b']);
    // An object patch of data that is not an object starts from {} (RFC 7396).
    expect((await patch(created.id, { data: { b: 1, c: null } })).status).toBe(200);
    expect((await read(created.id)).data).toEqual({ b: 1 });
    // metadata: null removes it all.
    expect((await patch(created.id, { metadata: null })).body.metadata).toEqual({});
  });

  it('patches one field of a card, re-fingerprinted; sets and removes an expiry', async () => {
    const created = await env.tenant.client.tokens.create({ type: 'card', data: card });
    // A card's fingerprint is of its number (docs/token-types.md): another number is another card.
    const updated = await patch(created.id, { data: { number: '4000056655665556' } });
    expect(updated.status).toBe(200);
    expect(updated.body.fingerprint).not.toBe(created.fingerprint);
    expect((await read(created.id)).data).toEqual({ ...card, number: '4000056655665556' });
    // Patching back gives the fingerprint of the original data.
    const back = await patch(created.id, { data: { number: card.number } });
    expect(back.body.fingerprint).toBe(created.fingerprint);
    // Another expiry is the same card: new data, the same fingerprint.
    const renewed = await patch(created.id, { data: { expiration_year: 2033 } });
    expect(renewed.body.fingerprint).toBe(created.fingerprint);
    expect((await read(created.id)).data).toEqual({ ...card, expiration_year: 2033 });

    const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
    expect((await patch(created.id, { expires_at: expiresAt })).body.expires_at).toBe(expiresAt);
    expect((await read(created.id)).expires_at).toBe(expiresAt);
    const removed = await patch(created.id, { expires_at: null });
    expect(removed.body).not.toHaveProperty('expires_at');
    expect(await read(created.id)).not.toHaveProperty('expires_at');
  });

  it('refuses a patch that leads to invalid data, appending nothing', async () => {
    const created = await env.tenant.client.tokens.create({ type: 'card', data: card });
    const before = await eventCount(env.stack);
    const badNumber = await patch(created.id, { data: { number: '4242424242424241' } });
    expect(badNumber.status).toBe(400);
    expect(Object.keys(badNumber.body.errors ?? {})).toEqual(['body.data.number']);
    const missingMonth = await patch(created.id, { data: { expiration_month: null } });
    expect(missingMonth.status).toBe(400);
    expect(Object.keys(missingMonth.body.errors ?? {})).toEqual(['body.data.expiration_month']);
    for (const [body, field] of [
      [{ data: null }, 'body.data'],
      [{ containers: [] }, 'body.containers'],
      [{ containers: null }, 'body.containers'],
      [{ expires_at: '2001-01-01T00:00:00Z' }, 'body.expires_at'],
      [{ metadata: { k: 1 } }, 'body.metadata.k'],
      [{ type: 'bank' }, 'body.type'],
      [{ id: 'other' }, 'body.id'],
    ] as const) {
      const refused = await patch(created.id, body);
      expect(refused.status, JSON.stringify(body)).toBe(400);
      expect(Object.keys(refused.body.errors ?? {}), JSON.stringify(body)).toContain(field);
    }
    const tooMany = Object.fromEntries(Array.from({ length: 51 }, (_, index) => [`k${index}`, 'v']));
    const overfull = await patch(created.id, { metadata: tooMany });
    expect([overfull.status, Object.keys(overfull.body.errors ?? {})]).toEqual([400, ['body.metadata']]);
    expect(await eventCount(env.stack)).toBe(before);
    expect((await read(created.id)).data).toEqual(card);
  });

  it('appends nothing for a patch that changes nothing', async () => {
    const created = await env.tenant.client.tokens.create({ type: 'card', data: card, metadata: { a: 'b' } });
    const before = await eventCount(env.stack);
    for (const body of [
      {},
      { metadata: { a: 'b' } },
      { metadata: { absent: null } },
      { data: { expiration_year: 2030 } },
      { containers: ['/PCI/high/'] },
    ]) {
      const unchanged = await patch(created.id, body);
      expect(unchanged.status, JSON.stringify(body)).toBe(200);
      expect(unchanged.body).not.toHaveProperty('modified_at');
    }
    expect(await eventCount(env.stack)).toBe(before);
  });

  it('needs token:update on every container before and after', async () => {
    const general = await env.tenant.client.tokens.create({ data: 'general' });
    const pci = await env.tenant.client.tokens.create({ type: 'card', data: card });
    const readOnly = await keyWith(env.tenant, { permissions: ['token:read', 'token:create'] });
    expect(
      (await readOnly.request('PATCH', `/tokens/${pci.id}`, { body: { metadata: { a: 'b' } } })).status,
    ).toBe(403);
    const pciOnly = await keyWith(env.tenant, {
      rules: [{ container: '/pci/', permissions: ['token:update', 'token:read'] }],
    });
    const scopedPatch = (id: string, body: unknown) => pciOnly.request('PATCH', `/tokens/${id}`, { body });
    const before = await eventCount(env.stack);
    expect((await scopedPatch(general.id, { metadata: { a: 'b' } })).status).toBe(403);
    expect((await scopedPatch(pci.id, { containers: ['/pci/low/', '/general/'] })).status).toBe(403);
    expect(await eventCount(env.stack)).toBe(before);
    expect((await scopedPatch(pci.id, { containers: ['/pci/low/'] })).status).toBe(200);
    expect((await read(pci.id)).containers).toEqual(['/pci/low/']);
    // Into a container the key may update, out of one it may not: the owner moves it back.
    expect((await patch(pci.id, { containers: ['/general/'] })).status).toBe(200);
    expect((await scopedPatch(pci.id, { containers: ['/pci/high/'] })).status).toBe(403);
  });

  it('answers 404 for another tenant’s token, an unknown one, a deleted or an expired one', async () => {
    const other = await env.stack.createTenant();
    const theirs = await other.client.tokens.create({ data: 'theirs' });
    expect((await patch(theirs.id, { metadata: { a: 'b' } })).status).toBe(404);
    expect((await other.client.request<Token>('GET', `/tokens/${theirs.id}`)).body.metadata).toEqual({});
    expect((await patch('no-such-token', { metadata: { a: 'b' } })).status).toBe(404);
    const deleted = await env.tenant.client.tokens.create({ data: 'gone' });
    await env.tenant.client.tokens.delete(deleted.id);
    expect((await patch(deleted.id, { metadata: { a: 'b' } })).status).toBe(404);
    const brief = await env.tenant.client.tokens.create({
      data: 'brief',
      expires_at: new Date(Date.now() + 500).toISOString(),
    });
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect((await patch(brief.id, { expires_at: null })).status).toBe(404);
  });

  it('is a row `update` in the audit log', async () => {
    const created = await env.tenant.client.tokens.create({ type: 'card', data: card });
    expect((await patch(created.id, { metadata: { audited: 'yes' } })).status).toBe(200);
    await eventually(async () => {
      const logs = await env.tenant.client.request<{ data: Log[] }>('GET', '/logs', {
        query: { entity_id: created.id },
      });
      expect(logs.body.data.map((log) => [log.entity_type, log.operation, log.message])).toContainEqual([
        'card',
        'update',
        'Token updated',
      ]);
    });
  });

  it('keeps a child list’s container scoping when the child moves', async () => {
    const parent = await env.tenant.client.tokens.create({ data: 'parent' });
    const child = await env.tenant.client.request<Token>('POST', `/tokens/${parent.id}/children`, {
      body: { data: 'child' },
    });
    const generalReader = await keyWith(env.tenant, {
      rules: [{ container: '/general/', permissions: ['token:read'] }],
    });
    const childIds = async () =>
      (await generalReader.request<TokenPage>('GET', `/tokens/${parent.id}/children`)).body.data.map(
        (token) => token.id,
      );
    expect(await childIds()).toEqual([child.body.id]);
    expect((await patch(child.body.id, { containers: ['/secret/'] })).status).toBe(200);
    expect(await childIds()).toEqual([]);
  });
});

describe('PATCH /tokens/{id} with a deduplicating tenant', () => {
  const env = useStack();

  it('refuses (409) an update that makes the token equal to one the key may read, naming it; otherwise updates', async () => {
    await env.tenant.client.request('PUT', '/tenants/self', {
      body: { name: 'Dedup', settings: { deduplicate_tokens: 'true' } },
    });
    const first = await env.tenant.client.tokens.create({ data: { ssn: '1' } });
    const second = await env.tenant.client.tokens.create({ data: { ssn: '2' } });
    expect(second.id).not.toBe(first.id);
    const before = await eventCount(env.stack);
    const collision = await env.tenant.client.request<Problem>('PATCH', `/tokens/${second.id}`, {
      body: { data: { ssn: '1' } },
    });
    expect(collision.status).toBe(409);
    expect(collision.body.detail).toContain(first.id);
    expect(await eventCount(env.stack)).toBe(before);
    // The same data in other containers is another token, not a duplicate.
    const moved = await env.tenant.client.request('PATCH', `/tokens/${second.id}`, {
      body: { data: { ssn: '1' }, containers: ['/hr/'] },
    });
    expect(moved.status).toBe(200);

    // A key that may not read the equal token is told nothing about it: its update goes through.
    const third = await env.tenant.client.tokens.create({ data: { ssn: '3' } });
    const updateOnly = await keyWith(env.tenant, { permissions: ['token:update'] });
    const blind = await updateOnly.request<Problem>('PATCH', `/tokens/${third.id}`, {
      body: { data: { ssn: '1' } },
    });
    expect(blind.status).toBe(200);
    expect(JSON.stringify(blind.body)).not.toContain(first.id);
  });
});

describe('GET /tokens', () => {
  const env = useStack();
  const list = (query: Record<string, string | number | string[]>, client = env.tenant.client) =>
    client.request<TokenPage & Problem>('GET', '/tokens', { query });

  /** 45 tokens, oldest first: 15 cards in /pci/high/, 30 tokens, metadata by index. */
  const created: Token[] = [];
  const seed = async () => {
    if (created.length) return created;
    for (let index = 0; index < 45; index++) {
      const metadata = { color: index % 3 === 0 ? 'red' : 'blue', size: index % 2 === 0 ? 'L' : 'S' };
      created.push(
        index % 3 === 0
          ? await env.tenant.client.tokens.create({ type: 'card', data: card, metadata })
          : await env.tenant.client.tokens.create({ data: { index }, metadata }),
      );
    }
    return created;
  };
  /** The list's order: created_at, then id, both descending (tokens of one millisecond by id). */
  const newestFirst = (tokens: (Token & { created_at?: string })[]) =>
    [...tokens]
      .sort((a, b) =>
        a.created_at === b.created_at ? (a.id < b.id ? 1 : -1) : a.created_at! < b.created_at! ? 1 : -1,
      )
      .map((token) => token.id);

  it('pages through every live token exactly once, newest first, by cursor and by page', async () => {
    const tokens = await seed();
    const seen: string[] = [];
    let start: string | null = null;
    let pages = 0;
    do {
      const page = await list({ size: 20, ...(start ? { start } : {}) });
      expect(page.status, JSON.stringify(page.body)).toBe(200);
      expect(page.body.pagination.total_items).toBeNull();
      expect(page.body.pagination.page_number).toBe(start ? null : 1);
      for (const token of page.body.data) expect(token).toHaveProperty('data');
      seen.push(...page.body.data.map((token) => token.id));
      start = page.body.pagination.next;
      pages++;
    } while (start);
    expect(pages).toBe(3);
    expect(seen).toEqual(newestFirst(tokens));
    const byPage: string[] = [];
    for (const page of [1, 2, 3]) {
      const body = (await list({ size: 20, page })).body;
      byPage.push(...body.data.map((token) => token.id));
      expect(body.pagination.next === null).toBe(page === 3);
    }
    expect(byPage).toEqual(seen);
  });

  it('filters by type, container and metadata (all must hold)', async () => {
    const tokens = await seed();
    const ids = async (query: Record<string, string | number | string[]>) =>
      (await list({ size: 100, ...query })).body.data.map((token) => token.id);
    const cards = tokens.filter((token) => token.type === 'card');
    expect(await ids({ type: 'card' })).toEqual(newestFirst(cards));
    expect(await ids({ type: ['card', 'token'] })).toEqual(newestFirst(tokens));
    expect(await ids({ type: 'bank' })).toEqual([]);
    expect(await ids({ container: '/pci/' })).toEqual(newestFirst(cards));
    expect(await ids({ container: ['/PCI/high/', '/general/'] })).toEqual(newestFirst(tokens));
    const redLarge = tokens.filter((token) => token.metadata.color === 'red' && token.metadata.size === 'L');
    expect(redLarge.length).toBeGreaterThan(0);
    expect(await ids({ 'metadata.color': 'red', 'metadata.size': 'L' })).toEqual(newestFirst(redLarge));
    expect(await ids({ 'metadata.color': 'green' })).toEqual([]);
    const blueTokens = tokens.filter((token) => token.metadata.color === 'blue');
    expect(await ids({ 'metadata.color': 'blue', type: 'token' })).toEqual(newestFirst(blueTokens));
  });

  it('finds tokens by metadata as their updates and deletions leave them, by cursor and by page', async () => {
    const batch = `batch-${Date.now()}`;
    const made: Token[] = [];
    for (let index = 0; index < 5; index++) {
      made.push(
        await env.tenant.client.tokens.create({ data: { index }, metadata: { batch, n: String(index) } }),
      );
    }
    const other = await env.stack.createTenant();
    await other.client.tokens.create({ data: 'theirs', metadata: { batch } });
    const byCursor = async (entries: Record<string, string>) => {
      const seen: string[] = [];
      let start: string | null = null;
      do {
        const page = await list({ size: 2, ...entries, ...(start ? { start } : {}) });
        expect(page.status, JSON.stringify(page.body)).toBe(200);
        seen.push(...page.body.data.map((token) => token.id));
        start = page.body.pagination.next;
      } while (start);
      return seen;
    };
    expect(await byCursor({ 'metadata.batch': batch })).toEqual(newestFirst(made));
    const secondPage = await list({ size: 2, page: 2, 'metadata.batch': batch });
    expect(secondPage.body.data.map((token) => token.id)).toEqual(newestFirst(made).slice(2, 4));

    const [moved, removed, kept] = [made[1]!, made[2]!, made[3]!];
    const patched = await env.tenant.client.request('PATCH', `/tokens/${moved.id}`, {
      body: { metadata: { batch: `${batch}-moved`, n: null } },
    });
    expect(patched.status).toBe(200);
    expect((await env.tenant.client.request('DELETE', `/tokens/${removed.id}`)).status).toBe(204);
    const remaining = made.filter((token) => token !== moved && token !== removed);
    expect(await byCursor({ 'metadata.batch': batch })).toEqual(newestFirst(remaining));
    expect(await byCursor({ 'metadata.batch': `${batch}-moved` })).toEqual([moved.id]);
    expect(await byCursor({ 'metadata.batch': `${batch}-moved`, 'metadata.n': '1' })).toEqual([]);
    expect(await byCursor({ 'metadata.n': '3', 'metadata.batch': batch })).toEqual([kept.id]);
  });

  it('lists only tokens in containers the key may read, and never another tenant’s', async () => {
    const tokens = await seed();
    const pciReader = await keyWith(env.tenant, {
      rules: [{ container: '/pci/', permissions: ['token:read'] }],
    });
    const ids = (await list({ size: 100 }, pciReader)).body.data.map((token) => token.id);
    expect(ids).toEqual(newestFirst(tokens.filter((token) => token.type === 'card')));
    const other = await env.stack.createTenant();
    await other.client.tokens.create({ data: 'theirs' });
    const theirs = (await list({ size: 100 }, other.client)).body.data;
    expect(theirs).toHaveLength(1);
    expect(tokens.map((token) => token.id)).not.toContain(theirs[0]!.id);
    const noRead = await keyWith(env.tenant, { permissions: ['token:create'] });
    expect((await list({}, noRead)).status).toBe(403);
  });

  it('records each listed token as a read in the audit log', async () => {
    await seed();
    const page = (await list({ size: 5, 'metadata.size': 'S' })).body.data;
    expect(page).toHaveLength(5);
    await eventually(async () => {
      for (const token of page) {
        const logs = await env.tenant.client.request<{ data: Log[] }>('GET', '/logs', {
          query: { entity_id: token.id },
        });
        expect(logs.body.data.map((log) => log.operation)).toContain('read');
      }
    });
  });

  it('refuses page with start, a forged cursor, and unknown parameters', async () => {
    const first = await list({ size: 1 });
    const start = first.body.pagination.next!;
    for (const [query, field] of [
      [{ page: 2, start }, 'query.start'],
      [{ start: 'bm90IGEgY3Vyc29y' }, 'query.start'],
      [
        { start: Buffer.from(JSON.stringify(['2026-01-01T00:00:00.000Z', 42])).toString('base64url') },
        'query.start',
      ],
      [{ size: 101 }, 'query.size'],
      [{ colour: 'red' }, 'query.colour'],
      [{ 'metadata.': 'x' }, 'query.metadata.'],
      [{ 'metadata.color': ['red', 'blue'] }, 'query.metadata.color'],
      [{ container: 'pci' }, 'query.container'],
      [{ type: 'cash' }, 'query.type'],
    ] as const) {
      const refused = await list(query as never);
      expect(refused.status, JSON.stringify(query)).toBe(400);
      expect(Object.keys(refused.body.errors ?? {}), JSON.stringify(query)).toContain(field);
    }
  });
});
