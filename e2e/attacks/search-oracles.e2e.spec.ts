// The generic oracle spec for terms on stored data. The attacker holds keys that may not reveal a
// token: one whose rule masks everything (with token:search, token:create and token:update), one
// that may only search, and the tenant's public key (token:create only). For every route that
// takes a value to compare with the tenant's data (a search's `data:` and `fingerprint:` terms, on
// both searches; deduplication on POST /tokens, POST /tokenize, a child create and PATCH
// /tokens/{id}; a unique index; the lists' filters, which take none on data), it sends the right
// guess and a wrong one: the answers must have the same status and the same shape, and never name
// the token holding the value.
import { beforeAll, describe, expect, it } from 'vitest';
import { useStack } from '../support/stack.ts';

/** An answer's shape: every leaf replaced by its type, arrays kept with their length. */
function shapeOf(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(shapeOf);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>)
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([key, inner]) => [key, shapeOf(inner)]),
    );
  }
  return value === null ? null : typeof value;
}

describe('attack: a term on stored data is an oracle for a key that may not reveal', () => {
  const env = useStack();
  const stamp = Date.now();
  const right = `passport X${stamp}`;
  const wrong = `passport Y${stamp}`;
  let targetId: string;
  let parentId: string;
  const keys: Record<string, string> = {};

  beforeAll(async () => {
    const owner = env.tenant.client;
    const target = await owner.request<{ id: string }>('POST', '/tokens', {
      body: { data: right, search_indexes: ['{{ data }}'] },
    });
    expect(target.status).toBe(201);
    targetId = target.body.id;
    parentId = (await owner.tokens.create({ data: `parent ${stamp}` })).id;
    keys.masked = (
      await owner.applications.create({
        name: 'masked',
        type: 'private',
        rules: [
          {
            container: '/',
            transform: 'mask',
            permissions: ['token:read', 'token:search', 'token:create', 'token:update'],
          },
        ],
      })
    ).key;
    keys['search only'] = (
      await owner.applications.create({ name: 'searcher', type: 'private', permissions: ['token:search'] })
    ).key;
    keys.public = (
      await owner.applications.create({ name: 'page', type: 'public', permissions: ['token:create'] })
    ).key;
  });

  /** The two answers of one probe agree in status and shape and never name the target. */
  const expectNoOracle = (
    what: string,
    forRight: { status: number; body: unknown },
    forWrong: { status: number; body: unknown },
  ) => {
    expect(JSON.stringify(forRight.body), `${what}: names the token holding the value`).not.toContain(
      targetId,
    );
    expect(forRight.status, `${what}: status`).toBe(forWrong.status);
    expect(shapeOf(forRight.body), `${what}: shape`).toEqual(shapeOf(forWrong.body));
  };

  it('search by data: and fingerprint: (both searches) answers a right guess as a wrong one', async () => {
    for (const name of ['masked', 'search only']) {
      const apiKey = keys[name]!;
      for (const path of ['/tokens/search', '/v2/tokens/search']) {
        const search = (query: string) =>
          env.tenant.client.request('POST', path, { body: { query }, apiKey });
        expectNoOracle(
          `${name} ${path} data:`,
          await search(`data:"${right}"`),
          await search(`data:"${wrong}"`),
        );
      }
    }
    // The fingerprint of a guess is in the answer of a create of it (the masked key may create).
    const fingerprintOf = async (value: string) =>
      (
        await env.tenant.client.request<{ fingerprint: string }>('POST', '/tokens', {
          body: { data: value },
          apiKey: keys.masked,
        })
      ).body.fingerprint;
    const [rightPrint, wrongPrint] = [await fingerprintOf(right), await fingerprintOf(wrong)];
    for (const path of ['/tokens/search', '/v2/tokens/search']) {
      const search = (fingerprint: string) =>
        env.tenant.client.request('POST', path, {
          body: { query: `fingerprint:${fingerprint}` },
          apiKey: keys.masked,
        });
      expectNoOracle(`masked ${path} fingerprint:`, await search(rightPrint), await search(wrongPrint));
    }
  });

  it('deduplication on POST /tokens, POST /tokenize, a child create and an update answers a right guess as a wrong one', async () => {
    for (const name of ['masked', 'public']) {
      const apiKey = keys[name]!;
      const create = (value: string) =>
        env.tenant.client.request('POST', '/tokens', {
          body: { data: value, deduplicate_token: true },
          apiKey,
        });
      expectNoOracle(`${name} POST /tokens`, await create(right), await create(wrong));
      const tokenize = (value: string) =>
        env.tenant.client.request('POST', '/tokenize', {
          body: { guess: { data: value, deduplicate_token: true } },
          apiKey,
        });
      expectNoOracle(`${name} POST /tokenize`, await tokenize(right), await tokenize(wrong));
    }
    const child = (value: string) =>
      env.tenant.client.request('POST', `/tokens/${parentId}/children`, {
        body: { data: value, deduplicate_token: true },
        apiKey: keys.masked,
      });
    expectNoOracle('masked POST /tokens/{id}/children', await child(right), await child(wrong));
    // An update that would make the key's own token equal to another refuses only to a revealer.
    const own = await env.tenant.client.request<{ id: string }>('POST', '/tokens', {
      body: { data: `own ${stamp}` },
      apiKey: keys.masked,
    });
    const update = (value: string) =>
      env.tenant.client.request('PATCH', `/tokens/${own.body.id}`, {
        body: { data: value, deduplicate_token: true },
        apiKey: keys.masked,
      });
    expectNoOracle('masked PATCH /tokens/{id}', await update(right), await update(wrong));
  });

  it('a unique index on a create answers a right guess as a wrong one', async () => {
    const unique = [{ expression: '{{ data }}', unique: true }];
    const held = await env.tenant.client.request('POST', '/tokens', {
      body: { data: `unique ${right}`, containers: ['/vault/'], search_indexes: unique },
    });
    expect(held.status).toBe(201);
    for (const name of ['masked', 'public']) {
      const create = (value: string) =>
        env.tenant.client.request('POST', '/tokens', {
          body: { data: value, search_indexes: unique },
          apiKey: keys[name]!,
        });
      expectNoOracle(
        `${name} unique index`,
        await create(`unique ${right}`),
        await create(`unique ${wrong}`),
      );
    }
  });

  it('the lists take no filter on data: GET /tokens and GET /v2/tokens refuse one alike', async () => {
    for (const [path, query] of [
      ['/tokens', (value: string) => ({ data: value })],
      ['/v2/tokens', (value: string) => ({ data: value })],
    ] as const) {
      const list = (value: string) =>
        env.tenant.client.request('GET', path, { query: query(value), apiKey: keys.masked });
      const forRight = await list(right);
      expect(forRight.status, path).toBe(400);
      expectNoOracle(`masked GET ${path}?data=`, forRight, await list(wrong));
    }
  });
});
