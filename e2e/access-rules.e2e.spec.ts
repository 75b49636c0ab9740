// Access rules with transforms, as a team moving from Basis Theory uses them: a support key whose
// rule on /pci/ masks reads a card's last four and a masked number on every read path and in a
// reactor's svc, while a back end's revealing key reads the number; a key with a rule on
// /pci/low/ reads a pci/high card by its restriction policy; a search by an index answers as the
// key's rule says, and the audit log says what the read showed.
import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '@tokenvault/platform/testing';
import { uniqueCardNumber } from './support/cards.ts';
import { createReactor } from './support/reactors.ts';
import { useStack } from './support/stack.ts';

interface Token {
  id: string;
  data?: { number?: string };
  card?: { last4?: string };
  mask?: unknown;
}

describe('access rules with transforms', () => {
  const env = useStack();
  const number = uniqueCardNumber();
  const maskedNumber = `${'X'.repeat(number.length - 4)}${number.slice(-4)}`;
  const marker = `rules-${randomBytes(4).toString('hex')}`;
  let cardId: string;
  let parentId: string;
  /** Role → its key, and the reactor bound to its application. */
  const keys: Record<string, { key: string; reactor: string }> = {};

  const applicationWith = async (name: string, rules: unknown[]) => {
    const created = await env.tenant.client.request<{ id: string; key: string }>('POST', '/applications', {
      body: { name, type: 'private', permissions: [], rules },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const reactor = await createReactor(
      env.tenant,
      {
        code: `module.exports = async function (req) {
          return { raw: { token: await req.svc.tokens.retrieve(req.args.id) } };
        };`,
        request_parameters: [{ name: 'id', type: 'string' }],
      },
      { applicationId: created.body.id },
    );
    return { key: created.body.key, reactor };
  };

  beforeAll(async () => {
    const admin = env.tenant.client;
    const created = await admin.request<Token>('POST', '/tokens', {
      body: {
        type: 'card',
        data: { number, expiration_month: 4, expiration_year: 2032 },
        metadata: { marker },
      },
    });
    expect(created.status).toBe(201);
    expect(created.body.mask).toMatchObject({ number: '{{ data.number | reveal_last: 4 }}' });
    cardId = created.body.id;
    parentId = (await admin.tokens.create({ data: 'order', metadata: { marker: `${marker}-parent` } })).id;
    expect((await admin.request('POST', `/tokens/${parentId}/children/${cardId}`)).status).toBe(204);
    const read = ['token:read', 'token:search'];
    keys.support = await applicationWith('support', [
      { description: 'cards masked', priority: 1, container: '/pci/', transform: 'mask', permissions: read },
      { priority: 2, container: '/', transform: 'reveal', permissions: read },
    ]);
    keys.backend = await applicationWith('back end', [
      { priority: 1, container: '/', transform: 'reveal', permissions: read },
    ]);
    keys.auditor = await applicationWith('auditor', [
      { container: '/', transform: 'redact', permissions: read },
    ]);
    keys.lowImpact = await applicationWith('low impact', [{ container: '/pci/low/', permissions: read }]);
  });

  /** The card as each read path answers it to a key. */
  const readsOf = async (key: string, reactor: string) => {
    const client = env.tenant.client;
    const get = await client.request<Token>('GET', `/tokens/${cardId}`, { apiKey: key });
    const list = await client.request<{ data: Token[] }>('GET', '/tokens', {
      query: { 'metadata.marker': marker },
      apiKey: key,
    });
    const v2 = await client.request<{ data: Token[] }>('GET', '/v2/tokens', {
      query: { metadata: JSON.stringify({ marker }) },
      apiKey: key,
    });
    const children = await client.request<{ data: Token[] }>('GET', `/tokens/${parentId}/children`, {
      apiKey: key,
    });
    const svc = await client.request<{ raw?: { token?: Token } }>('POST', `/reactors/${reactor}/react`, {
      body: { args: { id: cardId } },
    });
    return [get.body, list.body.data[0], v2.body.data[0], children.body.data[0], svc.body.raw?.token];
  };

  it('a key whose rule on /pci/ masks reads the last four and a masked number on every path, svc included', async () => {
    for (const token of await readsOf(keys.support!.key, keys.support!.reactor)) {
      expect(token?.id).toBe(cardId);
      expect(token?.card?.last4).toBe(number.slice(-4));
      expect(token?.data).toEqual({ number: maskedNumber, expiration_month: 4, expiration_year: 2032 });
    }
  });

  it('a revealing key reads the number on the same paths', async () => {
    for (const token of await readsOf(keys.backend!.key, keys.backend!.reactor)) {
      expect(token?.data).toEqual({ number, expiration_month: 4, expiration_year: 2032 });
    }
  });

  it('a redacting key reads the token without data; a rule on /pci/low/ reads it by its restriction policy (mask)', async () => {
    for (const token of await readsOf(keys.auditor!.key, keys.auditor!.reactor)) {
      expect(token?.id).toBe(cardId);
      expect(token).not.toHaveProperty('data');
    }
    const low = await env.tenant.client.request<Token>('GET', `/tokens/${cardId}`, {
      apiKey: keys.lowImpact!.key,
    });
    expect(low.body.data).toMatchObject({ number: maskedNumber });
    const parent = await env.tenant.client.request('GET', `/tokens/${parentId}`, {
      apiKey: keys.lowImpact!.key,
    });
    expect(parent.status).toBe(403);
  });

  it('a masking key searching by metadata gets the masked number, on record as a masked read, and by an index nothing; a revealing key the number', async () => {
    const client = env.tenant.client;
    const searched = uniqueCardNumber();
    const searchMarker = `${marker}-search`;
    const created = await client.request<Token>('POST', '/tokens', {
      body: {
        type: 'card',
        data: { number: searched, expiration_month: 5, expiration_year: 2033 },
        search_indexes: ['{{ data.number | last4 }}'],
        metadata: { marker: searchMarker },
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const query = `data:${searched.slice(-4)} AND metadata.marker:${searchMarker}`;
    const masked = `${'X'.repeat(searched.length - 4)}${searched.slice(-4)}`;
    for (const path of ['/v2/tokens/search', '/tokens/search']) {
      // A term on the data matches only tokens the key reveals (docs/search.md): none here.
      const byIndex = await client.request<{ data: Token[] }>('POST', path, {
        body: { query },
        apiKey: keys.support!.key,
      });
      expect(byIndex.status, JSON.stringify(byIndex.body)).toBe(200);
      expect(byIndex.body.data).toEqual([]);
      const found = await client.request<{ data: Token[] }>('POST', path, {
        body: { query: `metadata.marker:${searchMarker}` },
        apiKey: keys.support!.key,
      });
      expect(found.status, JSON.stringify(found.body)).toBe(200);
      expect(found.body.data.map((token) => token.id)).toEqual([created.body.id]);
      expect(found.body.data[0]!.data).toEqual({
        number: masked,
        expiration_month: 5,
        expiration_year: 2033,
      });
      expect(JSON.stringify(found.body)).not.toContain(searched);
    }
    const revealed = await client.request<{ data: Token[] }>('POST', '/v2/tokens/search', {
      body: { query },
      apiKey: keys.backend!.key,
    });
    expect(revealed.body.data[0]!.data).toMatchObject({ number: searched });
    await eventually(async () => {
      const logs = await client.request<{ data: { operation: string; message: string }[] }>('GET', '/logs', {
        query: { entity_id: created.body.id, size: 100 },
      });
      const reads = logs.body.data.filter((log) => log.operation === 'read').map((log) => log.message);
      expect(reads.sort()).toEqual([
        'Token retrieved',
        'Token retrieved (masked)',
        'Token retrieved (masked)',
      ]);
    });
  });
});
