import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { withTransaction, type PoolClient } from '@tokenvault/platform';
import { invalidationChannel, type DataOf } from '@tokenvault/cqrs';
import { projectionSpec, recordedEvent, useTestPool } from '@tokenvault/cqrs/testing';
import { eventStoreMigrations } from '@tokenvault/eventstore';
import { vaultMigrations } from '@tokenvault/vault';
import { tenancyMigrations } from '../migrations.ts';
import { streams, type TenancyEvent } from '../domain/tenancy.events.ts';
import { tenancyProjection } from './tenancy.projection.ts';

const tenant: string = randomUUID();
const otherTenant: string = randomUUID();
const actor = randomUUID();
const created_at = '2026-01-10T10:00:00.000Z';
const modified_at = '2026-01-11T10:00:00.000Z';

const event = <Type extends TenancyEvent['type']>(
  type: Type,
  data: DataOf<TenancyEvent, Type>,
  stream: string,
) => recordedEvent(type, data, { stream });

const tenantCreated = (tenantId = tenant, fields: Partial<DataOf<TenancyEvent, 'TenantCreated'>> = {}) =>
  event(
    'TenantCreated',
    {
      tenant_id: tenantId,
      name: `Tenant ${tenantId.slice(0, 8)}`,
      owner_id: actor,
      settings: { deduplicate_tokens: 'false' },
      created_by: actor,
      created_at,
      ...fields,
    },
    streams.tenant(tenantId),
  );

const tenantDeleted = (tenantId: string) =>
  event(
    'TenantDeleted',
    { tenant_id: tenantId, deleted_by: actor, deleted_at: modified_at },
    streams.tenant(tenantId),
  );

const userRegistered = (
  userId: string,
  email: string,
  names: { first_name?: string; last_name?: string } = {},
) => event('UserRegistered', { user_id: userId, email, ...names, created_at }, streams.user(userId));

const memberAdded = (memberId: string, userId: string, tenantId = tenant) =>
  event(
    'MemberAdded',
    {
      member_id: memberId,
      tenant_id: tenantId,
      user_id: userId,
      role: 'ADMIN',
      created_by: actor,
      created_at,
    },
    streams.member(tenantId, memberId),
  );

const memberRemoved = (memberId: string, userId: string, tenantId = tenant) =>
  event(
    'MemberRemoved',
    { member_id: memberId, tenant_id: tenantId, user_id: userId, removed_by: actor, removed_at: modified_at },
    streams.member(tenantId, memberId),
  );

const invitationCreated = (invitationId: string, email: string, tenantId = tenant) =>
  event(
    'InvitationCreated',
    {
      invitation_id: invitationId,
      tenant_id: tenantId,
      email,
      link_version: 1,
      token_hash: 'hash-1',
      expires_at: '2026-01-17T10:00:00.000Z',
      created_by: actor,
      created_at,
    },
    streams.invitation(tenantId, invitationId),
  );

const invitationResent = (invitationId: string) =>
  event(
    'InvitationResent',
    {
      invitation_id: invitationId,
      tenant_id: tenant,
      link_version: 2,
      token_hash: 'hash-2',
      expires_at: '2026-01-18T10:00:00.000Z',
      modified_by: actor,
      modified_at,
    },
    streams.invitation(tenant, invitationId),
  );

const invitationDeleted = (invitationId: string) =>
  event(
    'InvitationDeleted',
    { invitation_id: invitationId, tenant_id: tenant, deleted_by: actor, deleted_at: modified_at },
    streams.invitation(tenant, invitationId),
  );

const invitationAccepted = (invitationId: string, memberId: string, userId: string) =>
  event(
    'InvitationAccepted',
    {
      invitation_id: invitationId,
      tenant_id: tenant,
      link_version: 1,
      member_id: memberId,
      user_id: userId,
      accepted_at: modified_at,
    },
    streams.invitation(tenant, invitationId),
  );

const applicationCreated = (
  applicationId: string,
  tenantId = tenant,
  fields: Partial<DataOf<TenancyEvent, 'ApplicationCreated'>> = {},
) =>
  event(
    'ApplicationCreated',
    {
      application_id: applicationId,
      tenant_id: tenantId,
      name: 'Backend',
      type: 'private',
      permissions: ['token:create'],
      rules: [{ container: '/general/', permissions: ['token:read'] }],
      key_hash: `key-hash-${applicationId}`,
      created_by: actor,
      created_at,
      ...fields,
    },
    streams.application(tenantId, applicationId),
  );

const applicationUpdated = (
  applicationId: string,
  fields: Partial<DataOf<TenancyEvent, 'ApplicationUpdated'>> = {},
) =>
  event(
    'ApplicationUpdated',
    {
      application_id: applicationId,
      tenant_id: tenant,
      name: 'Renamed',
      permissions: ['token:create', 'token:delete'],
      rules: [],
      modified_by: actor,
      modified_at,
      ...fields,
    },
    streams.application(tenant, applicationId),
  );

const applicationDeleted = (applicationId: string) =>
  event(
    'ApplicationDeleted',
    { application_id: applicationId, tenant_id: tenant, deleted_by: actor, deleted_at: modified_at },
    streams.application(tenant, applicationId),
  );

const select = async <Row extends Record<string, unknown> = Record<string, unknown>>(
  tx: PoolClient,
  sql: string,
  values: unknown[] = [],
) => (await tx.query<Row>(sql, values)).rows;

/** Ids of a table's rows of one tenant (`id` of tenants, `key_hash` of api_keys, `id` otherwise). */
const idsIn = async (tx: PoolClient, table: string, tenantId = tenant) => {
  const [id, tenantColumn] =
    table === 'tenants'
      ? ['id', 'id']
      : table === 'api_keys'
        ? ['key_hash', 'tenant_id']
        : ['id', 'tenant_id'];
  const rows = await select<{ id: string }>(
    tx,
    `SELECT ${id}::text AS id FROM ${table} WHERE ${tenantColumn} = $1 ORDER BY 1`,
    [tenantId],
  );
  return rows.map((row) => row.id);
};

describe('tenancyProjection', () => {
  const db = useTestPool([...eventStoreMigrations, ...vaultMigrations, ...tenancyMigrations], { max: 3 });
  const spec = () => projectionSpec(tenancyProjection, db.pool);

  beforeAll(async () => {
    // The vault's keys of both tenants (made by the vault, not by events): a deletion destroys its own.
    for (const tenantId of [tenant, otherTenant]) {
      await db.pool.query(
        `INSERT INTO tenant_keys (tenant_id, wrapped_data_key, wrapped_fingerprint_key) VALUES ($1, 'wrapped', 'wrapped')`,
        [tenantId],
      );
    }
  });

  describe('tenants', () => {
    it('TenantCreated inserts the tenant; created again, the first stays', async () => {
      await spec()
        .given([tenantCreated()])
        .when([tenantCreated(tenant, { name: 'Second', settings: { deduplicate_tokens: 'true' } })])
        .then(async (tx) => {
          expect(await select(tx, 'SELECT * FROM tenants')).toEqual([
            {
              id: tenant,
              owner_id: actor,
              name: `Tenant ${tenant.slice(0, 8)}`,
              settings: { deduplicate_tokens: 'false' },
              created_by: actor,
              created_at: new Date(created_at),
              modified_by: null,
              modified_at: null,
            },
          ]);
        });
    });

    it('TenantUpdated sets name and settings', async () => {
      await spec()
        .given([tenantCreated(), tenantCreated(otherTenant)])
        .when([
          event(
            'TenantUpdated',
            {
              tenant_id: tenant,
              name: 'Renamed',
              settings: { deduplicate_tokens: 'true' },
              modified_by: actor,
              modified_at,
            },
            streams.tenant(tenant),
          ),
        ])
        .then(async (tx) => {
          expect(
            await select(
              tx,
              'SELECT id, name, settings, modified_by, modified_at FROM tenants ORDER BY id = $1',
              [tenant],
            ),
          ).toEqual([
            {
              id: otherTenant,
              name: `Tenant ${otherTenant.slice(0, 8)}`,
              settings: { deduplicate_tokens: 'false' },
              modified_by: null,
              modified_at: null,
            },
            {
              id: tenant,
              name: 'Renamed',
              settings: { deduplicate_tokens: 'true' },
              modified_by: actor,
              modified_at: new Date(modified_at),
            },
          ]);
        });
    });
  });

  describe('users and members', () => {
    it('UserRegistered inserts the user as registered, once', async () => {
      const ann = randomUUID();
      const bob = randomUUID();
      const events = [
        userRegistered(ann, 'Ann@Example.com', { first_name: 'Ann', last_name: 'Lee' }),
        userRegistered(bob, 'bob@example.com'),
      ];
      await spec()
        .given(events)
        .when(events)
        .then(async (tx) => {
          expect(await select(tx, 'SELECT * FROM users ORDER BY email')).toEqual([
            {
              id: ann,
              email: 'Ann@Example.com',
              first_name: 'Ann',
              last_name: 'Lee',
              picture: null,
              created_at: new Date(created_at),
            },
            {
              id: bob,
              email: 'bob@example.com',
              first_name: null,
              last_name: null,
              picture: null,
              created_at: new Date(created_at),
            },
          ]);
        });
    });

    it('MemberAdded inserts the membership, once', async () => {
      const member = randomUUID();
      const user = randomUUID();
      await spec()
        .given([tenantCreated(), memberAdded(member, user)])
        .when([memberAdded(member, user)])
        .then(async (tx) => {
          expect(await select(tx, 'SELECT * FROM tenant_members')).toEqual([
            {
              tenant_id: tenant,
              id: member,
              user_id: user,
              role: 'ADMIN',
              created_by: actor,
              created_at: new Date(created_at),
              modified_by: null,
              modified_at: null,
            },
          ]);
        });
    });

    it('MemberRemoved removes that membership only', async () => {
      const [kept, removed, elsewhere] = [randomUUID(), randomUUID(), randomUUID()];
      const user = randomUUID();
      await spec()
        .given([
          memberAdded(kept, randomUUID()),
          memberAdded(removed, user),
          memberAdded(elsewhere, user, otherTenant),
        ])
        .when([memberRemoved(removed, user)])
        .then(async (tx) => {
          expect(await idsIn(tx, 'tenant_members')).toEqual([kept]);
          expect(await idsIn(tx, 'tenant_members', otherTenant)).toEqual([elsewhere]);
        });
    });

    it('a user removed from a tenant can be added again as a new member', async () => {
      const user = randomUUID();
      const [first, second] = [randomUUID(), randomUUID()];
      await spec()
        .given([memberAdded(first, user), memberRemoved(first, user)])
        .when([memberAdded(second, user)])
        .then(async (tx) => expect(await idsIn(tx, 'tenant_members')).toEqual([second]));
    });
  });

  describe('invitations', () => {
    it('InvitationCreated inserts the pending invitation (never its token hash), once', async () => {
      const invitation = randomUUID();
      await spec()
        .given([invitationCreated(invitation, 'Ann@Example.com')])
        .when([invitationCreated(invitation, 'Ann@Example.com')])
        .then(async (tx) => {
          expect(await select(tx, 'SELECT * FROM tenant_invitations')).toEqual([
            {
              tenant_id: tenant,
              id: invitation,
              email: 'Ann@Example.com',
              link_version: 1,
              expires_at: new Date('2026-01-17T10:00:00.000Z'),
              created_by: actor,
              created_at: new Date(created_at),
              modified_by: null,
              modified_at: null,
            },
          ]);
        });
    });

    it('InvitationResent moves the link version and the expiry', async () => {
      const invitation = randomUUID();
      await spec()
        .given([invitationCreated(invitation, 'ann@example.com')])
        .when([invitationResent(invitation)])
        .then(async (tx) => {
          expect(
            await select(
              tx,
              'SELECT link_version, expires_at, modified_by, modified_at FROM tenant_invitations',
            ),
          ).toEqual([
            {
              link_version: 2,
              expires_at: new Date('2026-01-18T10:00:00.000Z'),
              modified_by: actor,
              modified_at: new Date(modified_at),
            },
          ]);
        });
    });

    it('InvitationDeleted and InvitationAccepted remove that invitation only', async () => {
      const [deleted, accepted, pending, elsewhere] = [
        randomUUID(),
        randomUUID(),
        randomUUID(),
        randomUUID(),
      ];
      await spec()
        .given([
          invitationCreated(deleted, 'a@example.com'),
          invitationCreated(accepted, 'b@example.com'),
          invitationCreated(pending, 'c@example.com'),
          invitationCreated(elsewhere, 'a@example.com', otherTenant),
        ])
        .when([invitationDeleted(deleted), invitationAccepted(accepted, randomUUID(), randomUUID())])
        .then(async (tx) => {
          expect(await idsIn(tx, 'tenant_invitations')).toEqual([pending]);
          expect(await idsIn(tx, 'tenant_invitations', otherTenant)).toEqual([elsewhere]);
        });
    });
  });

  describe('applications', () => {
    it('ApplicationCreated inserts the application and its key digest, once', async () => {
      const application = randomUUID();
      const events = [applicationCreated(application, tenant, { rate_limit: { requests_per_minute: 60 } })];
      await spec()
        .given(events)
        .when(events)
        .then(async (tx) => {
          expect(await select(tx, 'SELECT * FROM applications')).toEqual([
            {
              tenant_id: tenant,
              id: application,
              name: 'Backend',
              type: 'private',
              permissions: ['token:create'],
              rules: [{ container: '/general/', permissions: ['token:read'] }],
              rate_limit: { requests_per_minute: 60 },
              created_by: actor,
              created_at: new Date(created_at),
              modified_by: null,
              modified_at: null,
            },
          ]);
          // Its key's id is the application's own (firstKeyIdOf).
          expect(await select(tx, 'SELECT * FROM api_keys')).toEqual([
            {
              key_hash: `key-hash-${application}`,
              tenant_id: tenant,
              application_id: application,
              id: application,
              expires_at: null,
              created_by: actor,
              created_at: new Date(created_at),
            },
          ]);
        });
    });

    it('ApplicationUpdated sets its grants; a rate limit absent from the event is removed', async () => {
      const application = randomUUID();
      await spec()
        .given([applicationCreated(application, tenant, { rate_limit: { requests_per_minute: 60 } })])
        .when([applicationUpdated(application)])
        .then(async (tx) => {
          expect(
            await select(
              tx,
              'SELECT name, type, permissions, rules, rate_limit, modified_by, modified_at FROM applications',
            ),
          ).toEqual([
            {
              name: 'Renamed',
              type: 'private',
              permissions: ['token:create', 'token:delete'],
              rules: [],
              rate_limit: null,
              modified_by: actor,
              modified_at: new Date(modified_at),
            },
          ]);
          expect(await idsIn(tx, 'api_keys')).toEqual([`key-hash-${application}`]);
        });
    });

    it('ApplicationDeleted removes the application and its key digest only', async () => {
      const [deleted, kept] = [randomUUID(), randomUUID()];
      await spec()
        .given([applicationCreated(deleted), applicationCreated(kept)])
        .when([applicationDeleted(deleted)])
        .then(async (tx) => {
          expect(await idsIn(tx, 'applications')).toEqual([kept]);
          expect(await idsIn(tx, 'api_keys')).toEqual([`key-hash-${kept}`]);
        });
    });
  });

  describe('application keys', () => {
    const keyCreated = (applicationId: string, keyId: string, expiresAt?: string) =>
      event(
        'ApplicationKeyCreated',
        {
          application_id: applicationId,
          tenant_id: tenant,
          key_id: keyId,
          key_hash: `key-hash-${keyId}`,
          ...(expiresAt ? { expires_at: expiresAt } : {}),
          created_by: actor,
          created_at: modified_at,
        },
        streams.application(tenant, applicationId),
      );
    const keyDeleted = (applicationId: string, keyId: string) =>
      event(
        'ApplicationKeyDeleted',
        {
          application_id: applicationId,
          tenant_id: tenant,
          key_id: keyId,
          deleted_by: actor,
          deleted_at: modified_at,
        },
        streams.application(tenant, applicationId),
      );

    it('ApplicationKeyCreated inserts the key’s digest, id and dates beside the application’s first key, once', async () => {
      const [application, key] = [randomUUID(), randomUUID()];
      const expiresAt = '2026-02-01T00:00:00.000Z';
      await spec()
        .given([applicationCreated(application), keyCreated(application, key, expiresAt)])
        .when([keyCreated(application, key, expiresAt)])
        .then(async (tx) => {
          expect(
            await select(tx, 'SELECT * FROM api_keys WHERE application_id = $1 ORDER BY created_at', [
              application,
            ]),
          ).toEqual([
            expect.objectContaining({ key_hash: `key-hash-${application}`, id: application }),
            {
              key_hash: `key-hash-${key}`,
              tenant_id: tenant,
              application_id: application,
              id: key,
              expires_at: new Date(expiresAt),
              created_by: actor,
              created_at: new Date(modified_at),
            },
          ]);
        });
    });

    it('ApplicationKeyDeleted removes that key only; ApplicationDeleted removes every key of the application', async () => {
      const [application, key, other] = [randomUUID(), randomUUID(), randomUUID()];
      await spec()
        .given([applicationCreated(application), keyCreated(application, key), applicationCreated(other)])
        .when([keyDeleted(application, application)])
        .then(async (tx) => {
          expect(await idsIn(tx, 'api_keys')).toEqual([`key-hash-${key}`, `key-hash-${other}`].sort());
        });
      await spec()
        .given([applicationCreated(application), keyCreated(application, key), applicationCreated(other)])
        .when([applicationDeleted(application)])
        .then(async (tx) => {
          expect(await idsIn(tx, 'api_keys')).toEqual([`key-hash-${other}`]);
        });
    });
  });

  describe('TenantDeleted', () => {
    it('removes the tenant with its members, invitations, applications and keys, and no other tenant’s', async () => {
      const user = randomUUID();
      const ofTenant = (tenantId: string) => [
        tenantCreated(tenantId),
        memberAdded(randomUUID(), user, tenantId),
        invitationCreated(randomUUID(), 'ann@example.com', tenantId),
        applicationCreated(randomUUID(), tenantId),
      ];
      await spec()
        .given([userRegistered(user, 'owner@example.com'), ...ofTenant(tenant), ...ofTenant(otherTenant)])
        .when([tenantDeleted(tenant)])
        .then(async (tx) => {
          const tables = ['tenants', 'tenant_members', 'tenant_invitations', 'applications', 'api_keys'];
          for (const table of tables) {
            expect(await idsIn(tx, table), table).toEqual([]);
            expect(await idsIn(tx, table, otherTenant), table).toHaveLength(1);
          }
          // Users belong to no tenant: a member of a deleted tenant is still registered.
          expect(await select(tx, 'SELECT id FROM users')).toEqual([{ id: user }]);
        });
    });
  });

  // Committed (a notification is sent at commit), with tenants that have no rows to change.
  it('announces the caches it makes stale at its commit (principals, a deleted tenant’s keys, a deleted key’s principals)', async () => {
    const updatedTenant = randomUUID();
    const deletedTenant = randomUUID();
    // A deleted key: the principals of its tenant (a process may hold it cached).
    const [keyTenant, keyOwner] = [randomUUID(), randomUUID()];
    const listener = await db.pool.connect();
    try {
      const received: string[] = [];
      listener.on('notification', (message) => received.push(message.payload ?? ''));
      await listener.query(`LISTEN ${invalidationChannel}`);
      await withTransaction(db.pool, async (tx) => {
        await tenancyProjection.apply(
          [
            event(
              'TenantUpdated',
              {
                tenant_id: updatedTenant,
                name: 'x',
                settings: { deduplicate_tokens: 'false' },
                modified_by: actor,
                modified_at,
              },
              streams.tenant(updatedTenant),
            ),
            tenantDeleted(deletedTenant),
            event(
              'ApplicationKeyDeleted',
              {
                application_id: keyOwner,
                tenant_id: keyTenant,
                key_id: keyOwner,
                deleted_by: actor,
                deleted_at: modified_at,
              },
              streams.application(keyTenant, keyOwner),
            ),
          ],
          tx,
        );
        // Nothing before the commit.
        await new Promise((resolve) => setTimeout(resolve, 50));
        expect(received).toEqual([]);
      });
      await expect
        .poll(() => received, { timeout: 2_000 })
        .toEqual([
          `principals:${updatedTenant}`,
          `principals:${deletedTenant}`,
          `tenant-keys:${deletedTenant}`,
          `principals:${keyTenant}`,
        ]);
    } finally {
      await listener.query('UNLISTEN *');
      listener.release();
    }
  });
});
