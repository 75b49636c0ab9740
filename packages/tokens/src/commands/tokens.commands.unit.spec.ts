import { createSecretKey, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { fixedClock, testPrincipal } from '@tokenvault/cqrs/testing';
import type { AppendSideData, RecordedEvent } from '@tokenvault/eventstore';
import { InMemoryEventStore } from '@tokenvault/eventstore/testing';
import { problemWith } from '@tokenvault/platform/testing';
import { createTokenBody } from '@tokenvault/contracts';
import type { NewTokenKey, SealedToken } from '@tokenvault/vault';
import { tokenStream } from '../domain/tokens.events.ts';
import { tokenKeysSideData } from '../projections/token-keys.projection.ts';
import type { TokenCommandsVault } from './token-command-kit.ts';
import { TokenCommands } from './tokens.commands.ts';

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
