import { createSecretKey, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { fixedClock, testPrincipal } from '@tokenvault/cqrs/testing';
import type { AppendSideData, RecordedEvent } from '@tokenvault/eventstore';
import { InMemoryEventStore } from '@tokenvault/eventstore/testing';
import { problemWith } from '@tokenvault/platform/testing';
import { createTokenBody } from '@tokenvault/contracts';
import type { NewTokenKey, SealedToken } from '@tokenvault/vault';
import { tokenStream } from '../domain/tokens.events.ts';
import { tokenClaims } from '../domain/tokens.uniqueness.ts';
import { tokenKeysSideData } from '../projections/token-keys.projection.ts';
import type { TokenCommandsVault } from './token-command-kit.ts';
import { TokenCommands } from './tokens.commands.ts';
import { CvcNotDueYet, removeCardCvc } from './remove-card-cvc.ts';

const tenantId = '8e4b7d20-0000-4000-8000-000000000001';
const actorId = '8e4b7d20-0000-4000-8000-000000000002';
const tokenId = 'card-1';
const now = '2026-03-01T00:00:00.000Z';
const principal = testPrincipal(tenantId, actorId, ['token:create', 'token:read']);
const deleter = testPrincipal(tenantId, actorId, ['token:create', 'token:read', 'token:delete']);

/**
 * TokenCommands on an in-memory store that records what each append carried, with a vault that
 * seals under a new key each time and records the keys it was asked to keep and to forget.
 */
function given() {
  const appends: { events: readonly RecordedEvent[]; sideData: AppendSideData | undefined }[] = [];
  const store = new InMemoryEventStore({
    onAppend: (events, context) => appends.push({ events, sideData: context.sideData }),
  });
  const kept: NewTokenKey[] = [];
  const forgotten: string[] = [];
  let sealed = 0;
  const vault: TokenCommandsVault = {
    fingerprint: async () => 'fingerprint',
    searchIndex: async (_tenant, text) => `blind:${text}`,
    sealToken: async (tenant, token): Promise<SealedToken> => {
      const ciphertext = `tk:sealed-${++sealed}`;
      return {
        ciphertext,
        newKey: {
          sealed: ciphertext,
          tenantId: tenant,
          tokenId: token,
          wrappedKey: `wrapped-${sealed}`,
          tenantKeyVersion: 1,
          expiresAt: null,
          unwrappedKey: createSecretKey(randomBytes(32)),
        },
      };
    },
    keepTokenKey: (key) => void kept.push(key),
    decrypt: async () => undefined,
    forgetToken: (tenant, token) => void forgotten.push(`${tenant}/${token}`),
  };
  const queries = { findByFingerprint: async () => undefined, childIds: async () => [] };
  return {
    store,
    appends,
    kept,
    forgotten,
    commands: new TokenCommands(store, vault, queries, fixedClock(now)),
  };
}

describe('TokenCommands against an in-memory event store', () => {
  it('create: the new token key goes with the append as its side data, never in the event, and is kept once stored', async () => {
    const { store, appends, kept, commands } = given();
    const body = createTokenBody.parse({ id: tokenId, type: 'token', data: 'secret' });
    const result = await commands.create(principal, body, 'request-1');
    expect(result.created).toBe(true);
    const [append] = appends;
    expect(append!.events.map((event) => event.type)).toEqual(['TokenCreated']);
    expect(append!.events[0]!.data).toMatchObject({ token_id: tokenId, data_ciphertext: 'tk:sealed-1' });
    expect(JSON.stringify(await store.readStream(tokenStream(tenantId, tokenId)))).not.toContain('wrapped-1');
    expect(append!.sideData).toEqual(tokenKeysSideData([{ ciphertext: 'tk:sealed-1', newKey: kept[0]! }]));
    expect(kept.map((key) => key.sealed)).toEqual(['tk:sealed-1']);
  });

  it('create: a refused append (the id is taken) keeps no key', async () => {
    const { appends, kept, commands } = given();
    const body = createTokenBody.parse({ id: tokenId, type: 'token', data: 'secret' });
    await commands.create(principal, body, 'request-1');
    await expect(commands.create(principal, body, 'request-2')).rejects.toSatisfy(problemWith(409));
    expect(appends).toHaveLength(1);
    expect(kept.map((key) => key.sealed)).toEqual(['tk:sealed-1']);
  });

  it('tokenize: every new token in one append, their keys its side data, kept once stored', async () => {
    const { appends, kept, commands } = given();
    const requests = ['a', 'b', 'c'].map((data, index) => ({
      where: `body.${index}`,
      body: createTokenBody.parse({ id: `bulk-${data}`, type: 'token', data }),
    }));
    const result = await commands.tokenize(principal, requests, 'request-1');
    expect(result.tokens.map((token) => token.id)).toEqual(['bulk-a', 'bulk-b', 'bulk-c']);
    expect(appends).toHaveLength(1);
    expect(appends[0]!.events.map((event) => [event.type, event.stream])).toEqual(
      ['bulk-a', 'bulk-b', 'bulk-c'].map((id) => ['TokenCreated', tokenStream(tenantId, id)]),
    );
    expect(new Set(appends[0]!.events.map((event) => event.position.commit)).size).toBe(1);
    expect(Object.values(appends[0]!.sideData ?? {}).flat()).toHaveLength(3);
    expect(kept.map((key) => key.sealed)).toEqual(['tk:sealed-1', 'tk:sealed-2', 'tk:sealed-3']);
  });

  it('tokenize: one id taken refuses all (409 naming its place), nothing appended and no key kept', async () => {
    const { appends, kept, commands } = given();
    await commands.create(principal, createTokenBody.parse({ id: 'taken', type: 'token', data: 'x' }), 'r-1');
    const requests = [
      { where: 'body.fresh', body: createTokenBody.parse({ type: 'token', data: 'y' }) },
      { where: 'body.again', body: createTokenBody.parse({ id: 'taken', type: 'token', data: 'z' }) },
    ];
    const refused = commands.tokenize(principal, requests, 'r-2');
    await expect(refused).rejects.toSatisfy(problemWith(409));
    await expect(commands.tokenize(principal, requests, 'r-3')).rejects.toThrow(/body\.again/);
    expect(appends).toHaveLength(1);
    expect(kept).toHaveLength(1);
  });

  it('create with an alias id: the id is drawn in the data’s format, and drawn again while a token of the tenant holds it', async () => {
    const { appends, commands } = given();
    // One digit leaves ten aliases: nine of them taken, the create draws until it finds the tenth.
    for (const digit of '012345678') {
      await commands.create(principal, createTokenBody.parse({ id: digit, data: 'x' }), `r-${digit}`);
    }
    const alias = createTokenBody.parse({ id: '{{ data | alias_preserve_format }}', data: '4' });
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, (_, index) => commands.create(principal, alias, `alias-${index}`)),
    );
    const created = results.flatMap((result) =>
      result.status === 'fulfilled' && result.value.created ? [result.value.token.id] : [],
    );
    // At most one of the twenty gets the one free alias; those that drew only taken ones are 409s.
    // (Each request finds it within its 5 draws with 1 − 0.9⁵ ≈ 41%: none of 20 doing so ≈ 3·10⁻⁵.)
    expect(created).toEqual(['9']);
    for (const result of results) {
      if (result.status === 'rejected') expect(result.reason).toSatisfy(problemWith(409));
    }
    expect(appends).toHaveLength(9 + created.length);
  });

  it('create with an alias id: every alias taken is a 409 saying so, after a bounded number of draws', async () => {
    const { commands } = given();
    for (const digit of '0123456789') {
      await commands.create(principal, createTokenBody.parse({ id: digit, data: 'x' }), `r-${digit}`);
    }
    const alias = createTokenBody.parse({ id: '{{ data | alias_preserve_format }}', data: '4' });
    await expect(commands.create(principal, alias, 'r-alias')).rejects.toThrow(/too few aliases/);
  });

  it('create with an alias id: another expression, or an alias that cannot be a token id, is a 400 naming body.id', async () => {
    const { appends, commands } = given();
    for (const id of [
      '{{ data | last4 }}',
      '{{ data | alias_preserve_format }}{{ data }}',
      '{{ data.number | alias_card }}',
    ]) {
      const body = createTokenBody.parse({ id, data: 'a b' });
      await expect(commands.create(principal, body, 'r-1')).rejects.toSatisfy(problemWith(400, 'body.id'));
    }
    const spaced = createTokenBody.parse({ id: '{{ data | alias_preserve_format }}', data: 'a b' });
    await expect(commands.create(principal, spaced, 'r-2')).rejects.toThrow(/no token id/);
    const long = createTokenBody.parse({ id: '{{ data | alias_preserve_length }}', data: 'a'.repeat(201) });
    await expect(commands.create(principal, long, 'r-3')).rejects.toSatisfy(problemWith(400, 'body.id'));
    expect(appends).toHaveLength(0);
  });

  it('tokenize with alias ids: each request draws its own, distinct within the call, in one append', async () => {
    const { appends, commands } = given();
    const requests = Array.from({ length: 5 }, (_, index) => ({
      where: `body.${index}`,
      body: createTokenBody.parse({ id: '{{ data | alias_preserve_format }}', data: String(index % 2) }),
    }));
    const result = await commands.tokenize(principal, requests, 'r-1');
    const ids = result.tokens.map((token) => token.id);
    expect(ids.every((id) => /^\d$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(5);
    expect(appends).toHaveLength(1);
    const bad = [
      { where: 'body.card', body: createTokenBody.parse({ id: '{{ data | alias_card }}', data: '1' }) },
    ];
    await expect(commands.tokenize(principal, bad, 'r-2')).rejects.toSatisfy(
      problemWith(400, 'body.card.id'),
    );
  });

  it('tokenize with an alias id a token of the tenant holds: drawn again, the call appended whole or not at all', async () => {
    // Nine of ten aliases taken: one draw finds the free one 1 time in 10, five draws 41 in 100.
    let appendedWhole = 0;
    for (let trial = 0; trial < 100; trial++) {
      const { appends, commands } = given();
      for (const digit of '012345678') {
        await commands.create(principal, createTokenBody.parse({ id: digit, data: 'x' }), `r-${digit}`);
      }
      const requests = [
        { where: 'body.plain', body: createTokenBody.parse({ data: 'y' }) },
        {
          where: 'body.alias',
          body: createTokenBody.parse({ id: '{{ data | alias_preserve_format }}', data: '4' }),
        },
      ];
      const outcome = await commands.tokenize(principal, requests, 'r-bulk').catch((error: unknown) => error);
      if (outcome instanceof Error) {
        expect(outcome).toSatisfy(problemWith(409));
        expect(outcome.message).toContain('body.alias');
        expect(appends).toHaveLength(9);
      } else {
        expect((outcome as { tokens: { id: string }[] }).tokens[1]!.id).toBe('9');
        expect(appends.slice(9).map((append) => append.events.length)).toEqual([2]);
        appendedWhole++;
      }
    }
    // Without drawing again about 10 calls of 100 would get through; with it about 41.
    expect(appendedWhole).toBeGreaterThan(20);
  });

  it('tokenize: a request for containers the key lacks is a 403 naming it, before anything is sealed', async () => {
    const { appends, kept, commands } = given();
    const creator = testPrincipal(tenantId, actorId, [], {
      rules: [{ container: '/pci/', permissions: ['token:create'] }],
    });
    const requests = [
      {
        where: 'body.card',
        body: createTokenBody.parse({ type: 'token', data: 'a', containers: ['/pci/'] }),
      },
      {
        where: 'body.other',
        body: createTokenBody.parse({ type: 'token', data: 'b', containers: ['/general/'] }),
      },
    ];
    await expect(commands.tokenize(creator, requests, 'r-1')).rejects.toSatisfy(problemWith(403));
    await expect(commands.tokenize(creator, requests, 'r-2')).rejects.toThrow(/body\.other/);
    expect(appends).toHaveLength(0);
    expect(kept).toHaveLength(0);
  });

  it('delete: the token key held in memory is forgotten once the delete is appended', async () => {
    const { appends, forgotten, commands } = given();
    await commands.create(
      deleter,
      createTokenBody.parse({ id: tokenId, type: 'token', data: 'secret' }),
      'request-1',
    );
    const deleted = await commands.delete(deleter, tokenId, 'request-2');
    expect(deleted.position).not.toBeNull();
    expect(appends.at(-1)!.events.map((event) => event.type)).toEqual(['TokenDeleted']);
    expect(forgotten).toEqual([`${tenantId}/${tokenId}`]);
  });

  it('associate: an association already there appends nothing; dissociate takes it back', async () => {
    const { appends, commands } = given();
    for (const id of ['parent', 'child']) {
      await commands.create(
        principal,
        createTokenBody.parse({ id, type: 'token', data: id }),
        `create-${id}`,
      );
    }
    expect((await commands.associate(principal, 'parent', 'child', 'request-1')).position).not.toBeNull();
    expect((await commands.associate(principal, 'parent', 'child', 'request-2')).position).toBeNull();
    expect((await commands.dissociate(principal, 'parent', 'child', 'request-3')).position).not.toBeNull();
    expect(appends.map((append) => append.events.map((event) => event.type))).toEqual([
      ['TokenCreated'],
      ['TokenCreated'],
      ['TokenAssociated'],
      ['TokenDissociated'],
    ]);
  });
});

/**
 * TokenCommands (and the CVC's removal) on an in-memory store, with a vault that keeps what it
 * sealed (so the commands can open it again) and fingerprints what it is given, in the open.
 */
function givenCards(ttlSeconds = 3600) {
  const appends: { events: readonly RecordedEvent[]; sideData: AppendSideData | undefined }[] = [];
  const store = new InMemoryEventStore({
    onAppend: (events, context) => appends.push({ events, sideData: context.sideData }),
    uniqueness: tokenClaims,
  });
  const plaintexts = new Map<string, unknown>();
  let sealed = 0;
  const vault: TokenCommandsVault = {
    fingerprint: async (_tenant, kind, value) => `${kind}:${JSON.stringify(value)}`,
    searchIndex: async (_tenant, text) => `blind:${text}`,
    sealToken: async (tenant, token, value, options = {}): Promise<SealedToken> => {
      const ciphertext = `tk:sealed-${++sealed}`;
      plaintexts.set(ciphertext, value);
      if (options.reuseKeyOf) return { ciphertext };
      return {
        ciphertext,
        newKey: {
          sealed: ciphertext,
          tenantId: tenant,
          tokenId: token,
          wrappedKey: `wrapped-${sealed}`,
          tenantKeyVersion: 1,
          expiresAt: null,
          unwrappedKey: createSecretKey(randomBytes(32)),
        },
      };
    },
    keepTokenKey: () => undefined,
    decrypt: async (_tenant, _token, ciphertext) => plaintexts.get(ciphertext),
    forgetToken: () => undefined,
  };
  let clockNow = Date.parse(now);
  const clock = { now: () => new Date(clockNow) };
  const queries = { findByFingerprint: async () => undefined, childIds: async () => [] };
  const commands = new TokenCommands(store, vault, queries, clock, { cardCvcTtlSeconds: ttlSeconds });
  const updater = testPrincipal(tenantId, actorId, [
    'token:create',
    'token:read',
    'token:update',
    'token:delete',
  ]);
  return {
    store,
    appends,
    plaintexts,
    vault,
    clock,
    commands,
    updater,
    advance: (ms: number) => void (clockNow += ms),
    /** The token's data as its stream has it now, opened. */
    dataOf: async (id: string) => {
      const events = await store.readStream(tokenStream(tenantId, id));
      const last = events.findLast((event) => (event.data as { data_ciphertext?: string }).data_ciphertext);
      return plaintexts.get((last!.data as { data_ciphertext: string }).data_ciphertext);
    },
    removal: (freshKey = true) => ({ store, vault, clock, freshKey }),
  };
}

describe('card tokens: summaries, fingerprints and the CVC’s removal', () => {
  const card = { number: '4242424242424242', expiration_month: 12, expiration_year: 2030, cvc: '123' };
  const cardBody = (data: unknown = card) => createTokenBody.parse({ id: tokenId, type: 'card', data });
  const inAnHour = '2026-03-01T01:00:00.000Z';

  it('create: privacy, the card summary and the CVC’s time go in the event; the fingerprint is of the number', async () => {
    const { appends, commands, updater } = givenCards();
    const result = await commands.create(updater, cardBody(), 'request-1');
    const data = appends[0]!.events[0]!.data;
    expect(data).toMatchObject({
      containers: ['/pci/high/'],
      fingerprint: 'card:"4242424242424242"',
      privacy: { classification: 'pci', impact_level: 'high', restriction_policy: 'mask' },
      card: {
        bin: '42424242',
        last4: '4242',
        brand: 'visa',
        funding: 'credit',
        expiration_month: 12,
        expiration_year: 2030,
      },
      cvc_expires_at: inAnHour,
    });
    // Nothing of the number beyond BIN and last four (the fake vault's fingerprint is in the open).
    const { fingerprint: _inTheOpen, ...rest } = data as Record<string, unknown>;
    expect(JSON.stringify(rest)).not.toContain('424242424242');
    expect(result.token).toMatchObject({
      card: { bin: '42424242', last4: '4242' },
      privacy: { classification: 'pci' },
    });
    expect(result.token).not.toHaveProperty('data');
  });

  it('create: privacy given picks the container; a card without a CVC has no CVC time', async () => {
    const { appends, commands, updater } = givenCards();
    const { cvc: _cvc, ...noCvc } = card;
    await commands.create(
      updater,
      createTokenBody.parse({ type: 'card', data: noCvc, privacy: { restriction_policy: 'redact' } }),
      'request-1',
    );
    await commands.create(
      updater,
      createTokenBody.parse({
        type: 'token',
        data: 'x',
        privacy: { classification: 'pii', impact_level: 'low' },
      }),
      'request-2',
    );
    expect(appends.map((append) => append.events[0]!.data)).toEqual([
      expect.not.objectContaining({ cvc_expires_at: expect.anything() }),
      expect.objectContaining({
        containers: ['/pii/low/'],
        privacy: { classification: 'pii', impact_level: 'low', restriction_policy: 'redact' },
      }),
    ]);
    expect(appends[0]!.events[0]!.data).toMatchObject({
      privacy: { restriction_policy: 'redact' },
      containers: ['/pci/high/'],
    });
  });

  it('update: a new CVC (same number, same fingerprint) is new data with a new time; the same CVC keeps its time', async () => {
    const { appends, commands, updater, advance } = givenCards();
    await commands.create(updater, cardBody(), 'request-1');
    advance(10 * 60_000);
    await commands.update(updater, tokenId, { data: { cvc: '999' } }, 'request-2');
    expect(appends.at(-1)!.events[0]!.data).toMatchObject({
      fingerprint: 'card:"4242424242424242"',
      cvc_expires_at: '2026-03-01T01:10:00.000Z',
    });
    expect(appends.at(-1)!.events[0]!.data).not.toHaveProperty('data_claim');
    await commands.update(updater, tokenId, { data: { expiration_year: 2031 } }, 'request-3');
    expect(appends.at(-1)!.events[0]!.data).toMatchObject({
      card: { expiration_year: 2031 },
      cvc_expires_at: '2026-03-01T01:10:00.000Z',
    });
    // The same data again: nothing appended.
    const before = appends.length;
    await commands.update(updater, tokenId, { data: { cvc: '999' } }, 'request-4');
    expect(appends).toHaveLength(before);
  });

  // A key that may update but not reveal the card (docs/security.md, "Data patches by keys that
  // may not reveal"): nothing of its answer or of what is appended may depend on the stored data.
  const updateOnlyCards = testPrincipal(tenantId, actorId, [], {
    rules: [{ container: '/', permissions: ['token:update'] }],
  });
  const maskingCardUpdater = testPrincipal(tenantId, actorId, [], {
    rules: [{ container: '/', transform: 'mask', permissions: ['token:read', 'token:update'] }],
  });

  it('update by a key that does not reveal: a partial patch is a 400 naming body.data, whatever is stored, and nothing is opened', async () => {
    for (const key of [updateOnlyCards, maskingCardUpdater]) {
      const { appends, commands, updater, vault } = givenCards();
      await commands.create(updater, cardBody(), 'request-1');
      let opened = 0;
      const decrypt = vault.decrypt;
      vault.decrypt = async (...args) => (opened++, decrypt(...args));
      const before = appends.length;
      // Expired by the stored year if merged (2030 is not), a wrong length by the stored brand:
      // neither is looked at, the patch alone is not a card.
      const partialPatches: Record<string, string | number>[] = [
        { expiration_month: 1 },
        { cvc: '1234' },
        { cvc: '123' },
      ];
      for (const data of partialPatches) {
        await expect(commands.update(key, tokenId, { data }, 'request-2')).rejects.toSatisfy(
          (error: unknown) => {
            const problem = error as { status: number; errors?: Record<string, string[]> };
            return (
              problem.status === 400 && /reveals the token/.test(problem.errors?.['body.data']?.[0] ?? '')
            );
          },
        );
      }
      expect(appends).toHaveLength(before);
      expect(opened).toBe(0);
    }
  });

  it('update by a key that does not reveal: complete data replaces (no merge), is always a new version, and its CVC’s time is new', async () => {
    const { appends, commands, updater, advance, dataOf } = givenCards();
    await commands.create(updater, cardBody(), 'request-1');
    advance(10 * 60_000);
    // The same data as stored: still resealed and appended, the CVC's time counted from now.
    await commands.update(updateOnlyCards, tokenId, { data: card }, 'request-2');
    expect(appends.at(-1)!.events[0]!.data).toMatchObject({
      cvc_expires_at: '2026-03-01T01:10:00.000Z',
      modified_at: '2026-03-01T00:10:00.000Z',
    });
    expect(await dataOf(tokenId)).toEqual(card);
    // Complete data without a CVC replaces the card: the stored CVC is not merged in.
    const { cvc: _cvc, ...withoutCvc } = card;
    await commands.update(updateOnlyCards, tokenId, { data: { ...withoutCvc, expiration_month: 11 } }, 'r-3');
    expect(await dataOf(tokenId)).toEqual({ ...withoutCvc, expiration_month: 11 });
    expect(appends.at(-1)!.events[0]!.data).not.toHaveProperty('cvc_expires_at');
    // Without data (its indexes given again, as they are) such a key keeps the stored data.
    await commands.update(updateOnlyCards, tokenId, { search_indexes: [] }, 'r-3b');
    expect(await dataOf(tokenId)).toEqual({ ...withoutCvc, expiration_month: 11 });
    // A key that reveals still merges, and the same data again appends nothing.
    await commands.update(updater, tokenId, { data: { cvc: '456' } }, 'r-4');
    expect(await dataOf(tokenId)).toEqual({ ...withoutCvc, expiration_month: 11, cvc: '456' });
    const before = appends.length;
    await commands.update(updater, tokenId, { data: { cvc: '456' } }, 'r-5');
    expect(appends).toHaveLength(before);
  });

  it('removal: after its time the CVC goes, sealed under a new key carried by the append; nothing derived changes', async () => {
    const { appends, commands, updater, advance, dataOf, removal } = givenCards();
    await commands.create(updater, cardBody(), 'request-1');
    await expect(
      removeCardCvc(removal(), { tenantId, tokenId, cvcExpiresAt: inAnHour }, 'job-1'),
    ).rejects.toThrow(CvcNotDueYet);
    advance(3600_000);
    const removed = await removeCardCvc(removal(), { tenantId, tokenId, cvcExpiresAt: inAnHour }, 'job-1');
    expect(removed.outcome).toBe('removed');
    const { cvc: _cvc, ...rest } = card;
    expect(await dataOf(tokenId)).toEqual(rest);
    const [event] = appends.at(-1)!.events;
    expect(event!.type).toBe('TokenCvcRemoved');
    expect(Object.keys(event!.data as object).sort()).toEqual([
      'data_ciphertext',
      'derived',
      'removed_at',
      'tenant_id',
      'token_id',
      'type',
    ]);
    // Nothing was derived from the CVC: the fingerprint (of the number) and summary stay, no claim moves.
    expect((event!.data as { derived: unknown }).derived).toEqual({
      fingerprint: 'card:"4242424242424242"',
      card: expect.objectContaining({ bin: '42424242', last4: '4242' }),
    });
    expect(event!.metadata).toMatchObject({ actor_type: 'system', correlation_id: 'job-1' });
    expect(appends.at(-1)!.sideData).toBeDefined();
    // Retried: nothing more to do.
    expect(
      (await removeCardCvc(removal(), { tenantId, tokenId, cvcExpiresAt: inAnHour }, 'job-1')).outcome,
    ).toBe('no-cvc');
  });

  it('removal: indexes, unique claims, the fingerprint and its deduplication claim computed from the CVC go with it, in the same append', async () => {
    const { appends, commands, updater, advance, removal } = givenCards();
    const byCvc = '{{ data.cvc }}';
    const otherNumber = '4000056655665556';
    await commands.create(
      updater,
      createTokenBody.parse({
        id: tokenId,
        type: 'card',
        data: card,
        search_indexes: [{ expression: byCvc, unique: true }, '{{ data.number | last4 }}'],
        fingerprint_expression: byCvc,
        deduplicate_token: true,
      }),
      'request-1',
    );
    const uniqueProbe = (id: string) =>
      commands.create(
        updater,
        createTokenBody.parse({
          id,
          type: 'card',
          data: { ...card, number: otherNumber },
          search_indexes: [{ expression: byCvc, unique: true }],
        }),
        `probe-${id}`,
      );
    const dedupeProbe = (id: string) =>
      commands.create(
        updater,
        createTokenBody.parse({
          id,
          type: 'card',
          data: { ...card, number: otherNumber },
          fingerprint_expression: byCvc,
          deduplicate_token: true,
        }),
        `dedupe-${id}`,
      );
    // While the CVC is there, its unique index refuses it.
    await expect(uniqueProbe('probe-1')).rejects.toSatisfy(problemWith(409));
    advance(3600_000);
    const removed = await removeCardCvc(removal(), { tenantId, tokenId, cvcExpiresAt: inAnHour }, 'job-1');
    expect(removed.outcome).toBe('removed');
    const [event] = appends.at(-1)!.events;
    expect(event!.type).toBe('TokenCvcRemoved');
    // The CVC's index gives nothing (kept, indexing nothing), the fingerprint expression is gone
    // and the number's fingerprint is back; the claims move in this append.
    expect((event!.data as { derived: unknown }).derived).toEqual({
      fingerprint: 'card:"4242424242424242"',
      card: expect.objectContaining({ last4: '4242' }),
      search_indexes: [{ expression: byCvc, unique: true }, { expression: '{{ data.number | last4 }}' }],
      search_index_values: ['blind:4242'],
      data_claim: 'released',
      index_claims: true,
    });
    expect(JSON.stringify(event!.data)).not.toContain('123');
    // The claims went: the CVC is no longer unique to the token, nor deduplicated to it.
    expect((await uniqueProbe('probe-2')).token.id).toBe('probe-2');
    expect((await dedupeProbe('dedupe-1')).token.id).toBe('dedupe-1');
  });

  it('removal: a unique value the data left gives that another token holds is not claimed, and the removal goes through', async () => {
    const { appends, commands, updater, advance, removal } = givenCards();
    // An index of the whole data gives another value once the CVC is gone: the card's without it.
    const wholeData = { expression: '{{ data | json: "$" }}', unique: true };
    const { cvc: _cvc, ...noCvc } = card;
    await commands.create(
      updater,
      createTokenBody.parse({ id: tokenId, type: 'card', data: card, search_indexes: [wholeData] }),
      'request-1',
    );
    // Another token of the same card, without a CVC, holds that value.
    await commands.create(
      updater,
      createTokenBody.parse({ id: 'holder', type: 'card', data: noCvc, search_indexes: [wholeData] }),
      'request-2',
    );
    advance(3600_000);
    const removed = await removeCardCvc(removal(), { tenantId, tokenId, cvcExpiresAt: inAnHour }, 'job-1');
    expect(removed.outcome).toBe('removed');
    expect((appends.at(-1)!.events[0]!.data as { derived: unknown }).derived).toEqual({
      fingerprint: 'card:"4242424242424242"',
      card: expect.objectContaining({ last4: '4242' }),
      search_indexes: [wholeData],
      search_index_values: [`blind:${JSON.stringify(noCvc)}`],
      index_claims: true,
    });
  });

  it('removal: a token deleted meanwhile is gone; one given a new CVC meanwhile keeps it until its own time', async () => {
    const { commands, updater, advance, dataOf, removal } = givenCards();
    await commands.create(updater, cardBody(), 'request-1');
    advance(30 * 60_000);
    await commands.update(updater, tokenId, { data: { cvc: '456' } }, 'request-2');
    advance(30 * 60_000);
    const first = await removeCardCvc(removal(), { tenantId, tokenId, cvcExpiresAt: inAnHour }, 'job-1');
    expect(first.outcome).toBe('renewed');
    expect(await dataOf(tokenId)).toMatchObject({ cvc: '456' });
    advance(30 * 60_000);
    const second = await removeCardCvc(
      removal(),
      { tenantId, tokenId, cvcExpiresAt: '2026-03-01T01:30:00.000Z' },
      'job-2',
    );
    expect(second.outcome).toBe('removed');
    expect(await dataOf(tokenId)).not.toHaveProperty('cvc');
    await commands.delete(updater, tokenId, 'request-3');
    expect(
      (await removeCardCvc(removal(), { tenantId, tokenId, cvcExpiresAt: inAnHour }, 'job-3')).outcome,
    ).toBe('gone');
  });

  it('removal without a fresh key (an external event store) seals under the token’s key: no key in the side data', async () => {
    const { appends, commands, updater, advance, removal } = givenCards(60);
    await commands.create(updater, cardBody(), 'request-1');
    advance(60_000);
    const removed = await removeCardCvc(
      removal(false),
      { tenantId, tokenId, cvcExpiresAt: '2026-03-01T00:01:00.000Z' },
      'job-1',
    );
    expect(removed.outcome).toBe('removed');
    expect(appends.at(-1)!.sideData).toBeUndefined();
  });
});

describe('expressions on a token’s stored data: set by a key its rules reveal the token to, and untold to any other', () => {
  /** TokenCommands whose vault opens what it sealed, counting the openings. */
  function openingVault() {
    const sealedData = new Map<string, unknown>();
    const opened: string[] = [];
    let sealed = 0;
    const vault: TokenCommandsVault = {
      fingerprint: async (_tenant, _type, subject) => `fp:${JSON.stringify(subject)}`,
      searchIndex: async (_tenant, text) => `blind:${text}`,
      sealToken: async (_tenant, _token, data): Promise<SealedToken> => {
        const ciphertext = `tk:sealed-${++sealed}`;
        sealedData.set(ciphertext, data);
        return { ciphertext };
      },
      keepTokenKey: () => undefined,
      decrypt: async (_tenant, _token, ciphertext) => {
        opened.push(ciphertext);
        return sealedData.get(ciphertext);
      },
      forgetToken: () => undefined,
    };
    const store = new InMemoryEventStore();
    const queries = { findByFingerprint: async () => undefined, childIds: async () => [] };
    return { store, opened, commands: new TokenCommands(store, vault, queries, fixedClock(now)) };
  }
  const revealing = testPrincipal(tenantId, actorId, ['token:create', 'token:read', 'token:update']);
  const updateOnly = testPrincipal(tenantId, actorId, [], {
    rules: [{ container: '/general/', permissions: ['token:update'] }],
  });
  const maskingUpdater = testPrincipal(tenantId, actorId, [], {
    rules: [{ container: '/general/', transform: 'mask', permissions: ['token:read', 'token:update'] }],
  });
  // Evaluates when the secret's first letter and the note make a boolean ("t" + "rue"): whether it
  // fails tells of the secret.
  const probing = '{{ data.secret | slice: 0, 1 | append: data.note | to_boolean }}';
  const lastEvent = async (store: InMemoryEventStore) =>
    (await store.readStream(tokenStream(tenantId, 'tok-x'))).at(-1)!;

  it('update: a key that does not reveal the token sets no mask, index or fingerprint expression (403), and nothing is opened', async () => {
    const { opened, commands } = openingVault();
    await commands.create(
      revealing,
      createTokenBody.parse({ id: 'tok-x', type: 'token', data: { secret: 'tango', note: 'rue' } }),
      'r-1',
    );
    for (const key of [updateOnly, maskingUpdater]) {
      for (const body of [
        { search_indexes: [probing] },
        { fingerprint_expression: probing },
        { mask: { note: '{{ data.secret }}' } },
        { mask: null },
      ]) {
        await expect(commands.update(key, 'tok-x', body, 'r-2')).rejects.toSatisfy(problemWith(403));
      }
    }
    expect(opened).toEqual([]);
  });

  it('update: a data patch by such a key evaluates the stored expressions without telling their failures', async () => {
    const { store, commands } = openingVault();
    await commands.create(
      revealing,
      createTokenBody.parse({
        id: 'tok-x',
        type: 'token',
        data: { secret: 'tango', note: 'rue' },
        search_indexes: [probing, '{{ data.note }}'],
        fingerprint_expression: probing,
      }),
      'r-1',
    );
    // The revealing key is told which expression fails.
    await expect(commands.update(revealing, 'tok-x', { data: { note: 'alse' } }, 'r-2')).rejects.toSatisfy(
      problemWith(400, 'body.search_indexes.0'),
    );
    // The update-only key's patch goes through: it replaces the data whole (it may not merge into
    // data it cannot see), the failing index gives nothing, the fingerprint falls back to the
    // type's own subject.
    await commands.update(updateOnly, 'tok-x', { data: { note: 'alse' } }, 'r-3');
    const updated = (await lastEvent(store)).data as { search_index_values?: string[]; fingerprint: string };
    expect(updated.search_index_values).toEqual(['blind:alse']);
    expect(updated.fingerprint).toBe(`fp:${JSON.stringify({ note: 'alse' })}`);
  });

  it('create: a mask is checked on what a mask may show; one showing more is a 400 naming body.mask', async () => {
    const { commands } = openingVault();
    const card = { number: '4242424242424242', expiration_month: 12, expiration_year: 2040, cvc: '123' };
    for (const mask of [
      { number: '{{ data.number }}' },
      { number: '{{ data.number | slice: 0, 8 }}', rest: '{{ data.number | slice: 8, 8 }}' },
      { number: '{{ data.number | replace: "4", "a" }}' },
      { cvc: '{{ data.cvc }}' },
    ]) {
      await expect(
        commands.create(revealing, createTokenBody.parse({ type: 'card', data: card, mask }), 'r-1'),
      ).rejects.toSatisfy(problemWith(400, 'body.mask'));
    }
    const fine = await commands.create(
      revealing,
      createTokenBody.parse({
        type: 'card',
        data: card,
        mask: { last: '{{ data.number | reveal_last: 4, "*" }}' },
      }),
      'r-2',
    );
    expect(fine.created).toBe(true);
  });
});
