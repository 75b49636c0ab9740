import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataOf } from '@tokenvault/cqrs';
import { useTestPool } from '@tokenvault/cqrs/testing';
import {
  eventStoreMigrations,
  PostgresEventStore,
  UniqueClaimTaken,
  type ExpectedRevision,
} from '@tokenvault/eventstore';
import { tenancyStreams, type TenancyEvent } from '@tokenvault/tenancy';
import { tokenStream, type TokenEvent } from '@tokenvault/tokens';
import { uniquenessOf } from './projections.ts';

// The uniqueness claims as the runtime wires them (tenancy's, then tokens'), end to end through
// the PostgreSQL store: an append whose event claims a key another holder has is refused whole.

const actor = randomUUID();
const at = '2026-01-10T10:00:00.000Z';

describe('uniqueness claims of the runtime', () => {
  const db = useTestPool(eventStoreMigrations, { max: 4 });
  let store: PostgresEventStore;

  beforeAll(async () => {
    store = new PostgresEventStore(db.pool, { uniqueness: uniquenessOf });
  });
  afterAll(async () => {
    await store?.close();
  });

  /** One event; its metadata names the data's tenant (a user's registration: a tenant of its own). */
  const append = (stream: string, type: string, data: object, expectedRevision: ExpectedRevision = 'any') =>
    store.append(
      stream,
      [{ type, data, metadata: { tenant_id: (data as { tenant_id?: string }).tenant_id ?? randomUUID() } }],
      { expectedRevision },
    );

  /** The append's error (it must fail), after checking it stored nothing in its stream. */
  async function refused(stream: string, appending: () => Promise<unknown>): Promise<UniqueClaimTaken> {
    const before = await store.readStream(stream);
    const error = await appending().then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(UniqueClaimTaken);
    expect(await store.readStream(stream)).toEqual(before);
    return error as UniqueClaimTaken;
  }

  // Tenancy.

  const registerUser = (userId: string, email: string) => {
    const data: DataOf<TenancyEvent, 'UserRegistered'> = { user_id: userId, email, created_at: at };
    return append(tenancyStreams.user(userId), 'UserRegistered', data, 'no_stream');
  };

  const invitation = (tenantId: string, invitationId: string) =>
    tenancyStreams.invitation(tenantId, invitationId);
  const createInvitation = (tenantId: string, invitationId: string, email: string) => {
    const data: DataOf<TenancyEvent, 'InvitationCreated'> = {
      invitation_id: invitationId,
      tenant_id: tenantId,
      email,
      link_version: 1,
      token_hash: 'hash',
      expires_at: '2026-01-17T10:00:00.000Z',
      created_by: actor,
      created_at: at,
    };
    return append(invitation(tenantId, invitationId), 'InvitationCreated', data, 'no_stream');
  };
  const deleteInvitation = (tenantId: string, invitationId: string) => {
    const data: DataOf<TenancyEvent, 'InvitationDeleted'> = {
      invitation_id: invitationId,
      tenant_id: tenantId,
      deleted_by: actor,
      deleted_at: at,
    };
    return append(invitation(tenantId, invitationId), 'InvitationDeleted', data);
  };
  const acceptInvitation = (tenantId: string, invitationId: string) => {
    const data: DataOf<TenancyEvent, 'InvitationAccepted'> = {
      invitation_id: invitationId,
      tenant_id: tenantId,
      link_version: 1,
      member_id: randomUUID(),
      user_id: randomUUID(),
      accepted_at: at,
    };
    return append(invitation(tenantId, invitationId), 'InvitationAccepted', data);
  };
  const resendInvitation = (tenantId: string, invitationId: string) => {
    const data: DataOf<TenancyEvent, 'InvitationResent'> = {
      invitation_id: invitationId,
      tenant_id: tenantId,
      link_version: 2,
      token_hash: 'hash-2',
      expires_at: '2026-01-18T10:00:00.000Z',
      modified_by: actor,
      modified_at: at,
    };
    return append(invitation(tenantId, invitationId), 'InvitationResent', data);
  };

  const member = (tenantId: string, memberId: string) => tenancyStreams.member(tenantId, memberId);
  const addMember = (tenantId: string, memberId: string, userId: string) => {
    const data: DataOf<TenancyEvent, 'MemberAdded'> = {
      member_id: memberId,
      tenant_id: tenantId,
      user_id: userId,
      role: 'ADMIN',
      created_by: actor,
      created_at: at,
    };
    return append(member(tenantId, memberId), 'MemberAdded', data, 'no_stream');
  };
  const removeMember = (tenantId: string, memberId: string, userId: string) => {
    const data: DataOf<TenancyEvent, 'MemberRemoved'> = {
      member_id: memberId,
      tenant_id: tenantId,
      user_id: userId,
      removed_by: actor,
      removed_at: at,
    };
    return append(member(tenantId, memberId), 'MemberRemoved', data);
  };

  const deleteTenant = (tenantId: string) => {
    const data: DataOf<TenancyEvent, 'TenantDeleted'> = {
      tenant_id: tenantId,
      deleted_by: actor,
      deleted_at: at,
    };
    return append(tenancyStreams.tenant(tenantId), 'TenantDeleted', data);
  };

  // Tokens.

  interface TokenIdentity {
    type: 'token' | 'card' | 'bank';
    containers: string[];
    fingerprint: string;
  }
  const cardData: TokenIdentity = {
    type: 'card',
    containers: ['/pci/', '/general/'],
    fingerprint: 'fp-card',
  };

  const createToken = (tenantId: string, tokenId: string, identity: TokenIdentity, deduplicated = true) => {
    const data: DataOf<TokenEvent, 'TokenCreated'> = {
      token_id: tokenId,
      tenant_id: tenantId,
      ...identity,
      data_ciphertext: `sealed-${tokenId}`,
      metadata: {},
      created_by: actor,
      created_at: at,
      ...(deduplicated ? { deduplicated: true as const } : {}),
    };
    return append(tokenStream(tenantId, tokenId), 'TokenCreated', data, 'no_stream');
  };
  const updateToken = (
    tenantId: string,
    tokenId: string,
    identity: TokenIdentity,
    dataClaim: 'released' | 'moved' | undefined,
  ) => {
    const data: DataOf<TokenEvent, 'TokenUpdated'> = {
      token_id: tokenId,
      tenant_id: tenantId,
      ...identity,
      data_ciphertext: `sealed-again-${tokenId}`,
      metadata: {},
      ...(dataClaim ? { data_claim: dataClaim } : {}),
      modified_by: actor,
      modified_at: at,
    };
    return append(tokenStream(tenantId, tokenId), 'TokenUpdated', data);
  };
  const deleteToken = (tenantId: string, tokenId: string, type: TokenIdentity['type']) => {
    const data: DataOf<TokenEvent, 'TokenDeleted'> = {
      token_id: tokenId,
      tenant_id: tenantId,
      type,
      parent_ids: [],
      child_ids: [],
      deleted_by: actor,
      deleted_at: at,
    };
    return append(tokenStream(tenantId, tokenId), 'TokenDeleted', data);
  };

  describe('one user per e-mail address', () => {
    it('refuses a second registration of an address in any case, naming the first user', async () => {
      const [first, second] = [randomUUID(), randomUUID()];
      const address = `${randomUUID()}@Example.com`;
      await registerUser(first, address);
      const error = await refused(tenancyStreams.user(second), () =>
        registerUser(second, address.toUpperCase().replace('EXAMPLE', 'example')),
      );
      expect(error).toMatchObject({ scope: 'user-email', holder: first });
      expect(await store.claimHolder('user-email', address.toLowerCase())).toBe(first);
      // Another address is free.
      await registerUser(second, `other-${address}`);
    });
  });

  describe('one pending invitation per address and tenant', () => {
    it('refuses a second invitation of an address (any case) in the tenant, not in another tenant', async () => {
      const [tenant, otherTenant] = [randomUUID(), randomUUID()];
      const [first, second, elsewhere] = [randomUUID(), randomUUID(), randomUUID()];
      await createInvitation(tenant, first, 'Ann@Example.com');
      const error = await refused(invitation(tenant, second), () =>
        createInvitation(tenant, second, 'ann@example.COM'),
      );
      expect(error).toMatchObject({ scope: 'invitation-email', holder: first });
      expect(await store.claimHolder('invitation-email', `${tenant}:ann@example.com`)).toBe(first);
      await createInvitation(otherTenant, elsewhere, 'ann@example.com');
    });

    it('keeps the address through a resend; frees it once the invitation is deleted or accepted', async () => {
      const tenant = randomUUID();
      const [first, second, third, fourth] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
      await createInvitation(tenant, first, 'bob@example.com');
      await resendInvitation(tenant, first);
      expect(
        (await refused(invitation(tenant, second), () => createInvitation(tenant, second, 'bob@example.com')))
          .holder,
      ).toBe(first);

      await deleteInvitation(tenant, first);
      await createInvitation(tenant, second, 'bob@example.com');
      expect(
        (await refused(invitation(tenant, third), () => createInvitation(tenant, third, 'bob@example.com')))
          .holder,
      ).toBe(second);

      await acceptInvitation(tenant, second);
      await createInvitation(tenant, third, 'BOB@example.com');
      expect(await store.claimHolder('invitation-email', `${tenant}:bob@example.com`)).toBe(third);
      await refused(invitation(tenant, fourth), () => createInvitation(tenant, fourth, 'bob@example.com'));
    });
  });

  describe('one membership per user and tenant', () => {
    it('refuses a second membership of a user in the tenant until the first is removed', async () => {
      const [tenant, otherTenant] = [randomUUID(), randomUUID()];
      const user = randomUUID();
      const [first, second, elsewhere] = [randomUUID(), randomUUID(), randomUUID()];
      await addMember(tenant, first, user);
      const error = await refused(member(tenant, second), () => addMember(tenant, second, user));
      expect(error).toMatchObject({ scope: 'tenant-member', holder: first });
      // The same user in another tenant, and another user in this one.
      await addMember(otherTenant, elsewhere, user);
      await addMember(tenant, randomUUID(), randomUUID());

      await removeMember(tenant, first, user);
      await addMember(tenant, second, user);
      expect(await store.claimHolder('tenant-member', `${tenant}:${user}`)).toBe(second);
    });
  });

  describe('one deduplicated token per data, type and containers in a tenant', () => {
    it('refuses a deduplicated create of equal data (containers in any order), naming the holder', async () => {
      const tenant = randomUUID();
      await createToken(tenant, 'first', cardData);
      const error = await refused(tokenStream(tenant, 'second'), () =>
        createToken(tenant, 'second', { ...cardData, containers: ['/general/', '/pci/'] }),
      );
      expect(error).toMatchObject({ scope: 'token-data', holder: `${tenant}/first` });
      expect(await store.claimHolder('token-data', `${tenant}:card:/general/,/pci/:fp-card`)).toBe(
        `${tenant}/first`,
      );
    });

    it('lets through data that differs in tenant, type, containers or fingerprint, and creates that do not deduplicate', async () => {
      const [tenant, otherTenant] = [randomUUID(), randomUUID()];
      await createToken(tenant, 'first', cardData);
      await createToken(otherTenant, 'first', cardData);
      await createToken(tenant, 'other-type', { ...cardData, type: 'bank' });
      await createToken(tenant, 'fewer-containers', { ...cardData, containers: ['/pci/'] });
      await createToken(tenant, 'other-data', { ...cardData, fingerprint: 'fp-other' });
      await createToken(tenant, 'not-deduplicated', cardData, false);
      expect(await store.claimHolder('token-data', `${tenant}:card:/general/,/pci/:fp-card`)).toBe(
        `${tenant}/first`,
      );
    });

    it('frees the data when the token releases its claim (an update while not deduplicating) or is deleted', async () => {
      const tenant = randomUUID();
      await createToken(tenant, 'first', cardData);
      // An update that keeps the data claims nothing and gives up nothing.
      await updateToken(tenant, 'first', cardData, undefined);
      await refused(tokenStream(tenant, 'second'), () => createToken(tenant, 'second', cardData));

      await updateToken(tenant, 'first', { ...cardData, fingerprint: 'fp-new' }, 'released');
      await createToken(tenant, 'second', cardData);
      // Released: the new data of the first token is no one's.
      await createToken(tenant, 'third', { ...cardData, fingerprint: 'fp-new' });

      await deleteToken(tenant, 'second', 'card');
      await createToken(tenant, 'fourth', cardData);
      expect(await store.claimHolder('token-data', `${tenant}:card:/general/,/pci/:fp-card`)).toBe(
        `${tenant}/fourth`,
      );
    });

    it('moves the claim with the data: the old data is free, the new one taken (and refused when taken)', async () => {
      const tenant = randomUUID();
      await createToken(tenant, 'mover', cardData);
      await createToken(tenant, 'holder', { ...cardData, fingerprint: 'fp-held' });

      await updateToken(tenant, 'mover', { ...cardData, fingerprint: 'fp-moved' }, 'moved');
      await createToken(tenant, 'old-data', cardData);
      const error = await refused(tokenStream(tenant, 'new-data'), () =>
        createToken(tenant, 'new-data', { ...cardData, fingerprint: 'fp-moved' }),
      );
      expect(error.holder).toBe(`${tenant}/mover`);

      // Onto data another token holds: the update itself is refused, and the mover keeps its claim.
      const moveOnto = await refused(tokenStream(tenant, 'mover'), () =>
        updateToken(tenant, 'mover', { ...cardData, fingerprint: 'fp-held' }, 'moved'),
      );
      expect(moveOnto.holder).toBe(`${tenant}/holder`);
      expect(await store.claimHolder('token-data', `${tenant}:card:/general/,/pci/:fp-moved`)).toBe(
        `${tenant}/mover`,
      );
    });
  });

  describe('one token per value of a unique search index in a tenant', () => {
    const withUnique = (tenantId: string, tokenId: string, values: string[]) => {
      const data: DataOf<TokenEvent, 'TokenCreated'> = {
        token_id: tokenId,
        tenant_id: tenantId,
        type: 'token',
        containers: ['/general/'],
        fingerprint: `fp-${tokenId}`,
        data_ciphertext: `sealed-${tokenId}`,
        metadata: {},
        created_by: actor,
        created_at: at,
        search_indexes: [{ expression: '{{ data }}', unique: true }],
        search_index_values: values,
        unique_index_values: values,
      };
      return append(tokenStream(tenantId, tokenId), 'TokenCreated', data, 'no_stream');
    };
    const moveUnique = (tenantId: string, tokenId: string, values: string[]) => {
      const data: DataOf<TokenEvent, 'TokenUpdated'> = {
        token_id: tokenId,
        tenant_id: tenantId,
        type: 'token',
        containers: ['/general/'],
        fingerprint: `fp-${tokenId}`,
        data_ciphertext: `sealed-again-${tokenId}`,
        metadata: {},
        modified_by: actor,
        modified_at: at,
        search_indexes: [{ expression: '{{ data }}', unique: true }],
        search_index_values: values,
        unique_index_values: values,
        index_claims: true,
      };
      return append(tokenStream(tenantId, tokenId), 'TokenUpdated', data);
    };

    it('refuses a second token with the value in the tenant, not in another; moves with an update; frees on delete', async () => {
      const [tenant, otherTenant] = [randomUUID(), randomUUID()];
      await withUnique(tenant, 'first', ['h1']);
      await withUnique(otherTenant, 'first', ['h1']);
      const error = await refused(tokenStream(tenant, 'second'), () =>
        withUnique(tenant, 'second', ['h2', 'h1']),
      );
      expect(error).toMatchObject({ scope: 'token-search-index', holder: `${tenant}/first` });

      await moveUnique(tenant, 'first', ['h3']);
      await withUnique(tenant, 'second', ['h1']);
      await refused(tokenStream(tenant, 'third'), () => withUnique(tenant, 'third', ['h3']));
      await deleteToken(tenant, 'first', 'token');
      await withUnique(tenant, 'third', ['h3']);
      expect(await store.claimHolder('token-search-index', `${tenant}:h3`)).toBe(`${tenant}/third`);
    });
  });

  describe('a field’s removal (TokenCvcRemoved) moves the claims derived from it', () => {
    const removal = (
      tenantId: string,
      tokenId: string,
      derived: DataOf<TokenEvent, 'TokenCvcRemoved'>['derived'],
    ) =>
      append(tokenStream(tenantId, tokenId), 'TokenCvcRemoved', {
        token_id: tokenId,
        tenant_id: tenantId,
        type: 'card',
        data_ciphertext: `sealed-without-cvc-${tokenId}`,
        removed_at: at,
        ...(derived ? { derived } : {}),
      } satisfies DataOf<TokenEvent, 'TokenCvcRemoved'>);

    it('gives up the old fingerprint’s claim and the unique values it no longer gives, claims the new ones', async () => {
      const tenant = randomUUID();
      await createToken(tenant, 'card', { ...cardData, fingerprint: 'fp-of-cvc' });
      await append(tokenStream(tenant, 'unique'), 'TokenCreated', {
        token_id: 'unique',
        tenant_id: tenant,
        type: 'card',
        containers: ['/pci/'],
        fingerprint: 'fp-unique',
        data_ciphertext: 'sealed-unique',
        metadata: {},
        created_by: actor,
        created_at: at,
        search_indexes: [{ expression: '{{ data.cvc }}', unique: true }],
        search_index_values: ['h-cvc', 'h-last4'],
        unique_index_values: ['h-cvc', 'h-last4'],
      } satisfies DataOf<TokenEvent, 'TokenCreated'>);

      // Before 'derived' (or nothing changed): no claim moves.
      await removal(tenant, 'card', undefined);
      expect(await store.claimHolder('token-data', `${tenant}:card:/general/,/pci/:fp-of-cvc`)).toBe(
        `${tenant}/card`,
      );
      await removal(tenant, 'card', { fingerprint: 'fp-of-number', data_claim: 'released' });
      expect(
        await store.claimHolder('token-data', `${tenant}:card:/general/,/pci/:fp-of-cvc`),
      ).toBeUndefined();
      await removal(tenant, 'unique', {
        fingerprint: 'fp-unique',
        search_index_values: ['h-last4', 'h-new'],
        unique_index_values: ['h-last4', 'h-new'],
        index_claims: true,
      });
      expect(await store.claimHolder('token-search-index', `${tenant}:h-cvc`)).toBeUndefined();
      expect(await store.claimHolder('token-search-index', `${tenant}:h-last4`)).toBe(`${tenant}/unique`);
      expect(await store.claimHolder('token-search-index', `${tenant}:h-new`)).toBe(`${tenant}/unique`);
    });
  });

  describe('TenantDeleted', () => {
    it('frees every claim of the tenant and none of another tenant’s (nor the users’)', async () => {
      const [tenant, otherTenant] = [randomUUID(), randomUUID()];
      const user = randomUUID();
      const address = `${randomUUID()}@example.com`;
      await registerUser(user, address);
      for (const tenantId of [tenant, otherTenant]) {
        await createInvitation(tenantId, randomUUID(), 'carol@example.com');
        await addMember(tenantId, randomUUID(), user);
        await createToken(tenantId, 'token', cardData);
      }
      const claimsOf = async (tenantId: string) =>
        (
          await db.pool.query<{ scope: string }>(
            'SELECT scope FROM es_unique_claims WHERE tenant_id = $1 ORDER BY scope',
            [tenantId],
          )
        ).rows.map((row) => row.scope);
      expect(await claimsOf(tenant)).toEqual(['invitation-email', 'tenant-member', 'token-data']);

      await deleteTenant(tenant);
      expect(await claimsOf(tenant)).toEqual([]);
      expect(await claimsOf(otherTenant)).toEqual(['invitation-email', 'tenant-member', 'token-data']);
      expect(await store.claimHolder('user-email', address)).toBe(user);

      // Free again in the deleted tenant, still held in the other.
      await createInvitation(tenant, randomUUID(), 'carol@example.com');
      await addMember(tenant, randomUUID(), user);
      await createToken(tenant, 'token-again', cardData);
      const invitationId = randomUUID();
      await refused(invitation(otherTenant, invitationId), () =>
        createInvitation(otherTenant, invitationId, 'carol@example.com'),
      );
      await refused(tokenStream(otherTenant, 'token-again'), () =>
        createToken(otherTenant, 'token-again', cardData),
      );
    });
  });
});
