import { notifyInvalidation, onTenantDeleted, type DataOf, type Projection } from '@tokenvault/cqrs';
import type { PoolClient } from '@tokenvault/platform';
import type { RecordedOf } from '@tokenvault/eventstore';
import { firstKeyIdOf } from '../domain/application.ts';
import type { TenancyEvent } from '../domain/tenancy.events.ts';

/** The rows of a deleted tenant in the tables of its members, invitations and applications. */
const tenantRowsDeleted = onTenantDeleted([
  'api_keys',
  'applications',
  'tenant_members',
  'tenant_invitations',
]);

export const tenancyProjection: Projection<TenancyEvent> = {
  name: 'tenancy',
  tables: ['tenants', 'users', 'tenant_members', 'tenant_invitations', 'applications', 'api_keys'],
  handles: [
    'TenantCreated',
    'TenantUpdated',
    'TenantDeleted',
    'UserRegistered',
    'MemberAdded',
    'MemberRemoved',
    'InvitationCreated',
    'InvitationResent',
    'InvitationDeleted',
    'InvitationAccepted',
    'ApplicationCreated',
    'ApplicationUpdated',
    'ApplicationDeleted',
    'ApplicationKeyCreated',
    'ApplicationKeyDeleted',
  ],
  async apply(events, tx) {
    for (const event of events) {
      await applyOne(event, tx);
      for (const key of tenancyInvalidationsOf(event)) await notifyInvalidation(tx, key);
    }
  },
};

/** Cached principals of this tenant (grants, settings) are stale once this commits. */
export const principalsOfTenant = (tenantId: string) => `principals:${tenantId}`;

/** Unwrapped data keys of this tenant held in memory are void once this commits (it was deleted). */
export const keysOfTenant = (tenantId: string) => `tenant-keys:${tenantId}`;

/** The tenant whose keys an invalidation key of keysOfTenant voids, if it is one. */
export const tenantOfKeysInvalidation = (key: string): string | undefined =>
  /^tenant-keys:(.+)$/.exec(key)?.[1];

/**
 * The cache keys an event makes stale: the projection announces them at its commit (every
 * process), and a process that appended the event itself tells its own caches at once.
 */
export function tenancyInvalidationsOf(event: { type: string; data: unknown }): string[] {
  const tenantId = (event.data as { tenant_id?: string }).tenant_id;
  if (!tenantId) return [];
  switch (event.type) {
    case 'TenantUpdated':
    case 'ApplicationUpdated':
    case 'ApplicationDeleted':
    case 'ApplicationKeyDeleted':
      return [principalsOfTenant(tenantId)];
    case 'TenantDeleted':
      return [principalsOfTenant(tenantId), keysOfTenant(tenantId)];
    default:
      // A new key (ApplicationKeyCreated) among them: keys unknown to a process are never cached.
      return [];
  }
}

/** A key's row: its digest (what a request is resolved by), its id and dates. */
async function insertKey(tx: PoolClient, key: DataOf<TenancyEvent, 'ApplicationKeyCreated'>): Promise<void> {
  await tx.query(
    `INSERT INTO api_keys (key_hash, tenant_id, application_id, id, expires_at, created_by, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`,
    [
      key.key_hash,
      key.tenant_id,
      key.application_id,
      key.key_id,
      key.expires_at ?? null,
      key.created_by,
      key.created_at,
    ],
  );
}

async function applyOne(event: RecordedOf<TenancyEvent>, tx: PoolClient): Promise<void> {
  switch (event.type) {
    case 'TenantCreated': {
      const d = event.data;
      await tx.query(
        `INSERT INTO tenants (id, owner_id, name, settings, created_by, created_at)
           VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING`,
        [d.tenant_id, d.owner_id, d.name, d.settings, d.created_by, d.created_at],
      );
      return;
    }
    case 'TenantUpdated': {
      const d = event.data;
      await tx.query(
        'UPDATE tenants SET name = $2, settings = $3, modified_by = $4, modified_at = $5 WHERE id = $1',
        [d.tenant_id, d.name, d.settings, d.modified_by, d.modified_at],
      );
      return;
    }
    case 'TenantDeleted':
      await tenantRowsDeleted(tx, [event.data]);
      // The tenant itself last: its row is keyed by its id.
      await tx.query('DELETE FROM tenants WHERE id = $1', [event.data.tenant_id]);
      return;
    case 'UserRegistered': {
      const d = event.data;
      await tx.query(
        `INSERT INTO users (id, email, first_name, last_name, created_at)
           VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO NOTHING`,
        [d.user_id, d.email, d.first_name ?? null, d.last_name ?? null, d.created_at],
      );
      return;
    }
    case 'MemberAdded': {
      const d = event.data;
      await tx.query(
        `INSERT INTO tenant_members (tenant_id, id, user_id, role, created_by, created_at)
           VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
        [d.tenant_id, d.member_id, d.user_id, d.role, d.created_by, d.created_at],
      );
      return;
    }
    case 'MemberRemoved': {
      const d = event.data;
      await tx.query('DELETE FROM tenant_members WHERE tenant_id = $1 AND id = $2', [
        d.tenant_id,
        d.member_id,
      ]);
      return;
    }
    case 'InvitationCreated': {
      const d = event.data;
      await tx.query(
        `INSERT INTO tenant_invitations (tenant_id, id, email, link_version, expires_at, created_by, created_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`,
        [d.tenant_id, d.invitation_id, d.email, d.link_version, d.expires_at, d.created_by, d.created_at],
      );
      return;
    }
    case 'InvitationResent': {
      const d = event.data;
      await tx.query(
        `UPDATE tenant_invitations SET link_version = $3, expires_at = $4, modified_by = $5, modified_at = $6
           WHERE tenant_id = $1 AND id = $2`,
        [d.tenant_id, d.invitation_id, d.link_version, d.expires_at, d.modified_by, d.modified_at],
      );
      return;
    }
    case 'InvitationDeleted':
    case 'InvitationAccepted': {
      const d = event.data;
      await tx.query('DELETE FROM tenant_invitations WHERE tenant_id = $1 AND id = $2', [
        d.tenant_id,
        d.invitation_id,
      ]);
      return;
    }
    case 'ApplicationCreated': {
      const d = event.data;
      await tx.query(
        `INSERT INTO applications (tenant_id, id, name, type, permissions, rules, created_by, created_at, rate_limit)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING`,
        [
          d.tenant_id,
          d.application_id,
          d.name,
          d.type,
          d.permissions,
          JSON.stringify(d.rules),
          d.created_by,
          d.created_at,
          d.rate_limit ? JSON.stringify(d.rate_limit) : null,
        ],
      );
      await insertKey(tx, {
        key_hash: d.key_hash,
        tenant_id: d.tenant_id,
        application_id: d.application_id,
        key_id: firstKeyIdOf(d.application_id),
        ...(d.key_expires_at === undefined ? {} : { expires_at: d.key_expires_at }),
        created_by: d.created_by,
        created_at: d.created_at,
      });
      return;
    }
    case 'ApplicationUpdated': {
      const d = event.data;
      await tx.query(
        `UPDATE applications SET name = $3, permissions = $4, rules = $5, modified_by = $6, modified_at = $7,
             rate_limit = $8
           WHERE tenant_id = $1 AND id = $2`,
        [
          d.tenant_id,
          d.application_id,
          d.name,
          d.permissions,
          JSON.stringify(d.rules),
          d.modified_by,
          d.modified_at,
          d.rate_limit ? JSON.stringify(d.rate_limit) : null,
        ],
      );
      return;
    }
    case 'ApplicationDeleted': {
      const d = event.data;
      await tx.query('DELETE FROM api_keys WHERE tenant_id = $1 AND application_id = $2', [
        d.tenant_id,
        d.application_id,
      ]);
      await tx.query('DELETE FROM applications WHERE tenant_id = $1 AND id = $2', [
        d.tenant_id,
        d.application_id,
      ]);
      return;
    }
    case 'ApplicationKeyCreated':
      await insertKey(tx, event.data);
      return;
    case 'ApplicationKeyDeleted': {
      const d = event.data;
      await tx.query('DELETE FROM api_keys WHERE tenant_id = $1 AND application_id = $2 AND id = $3', [
        d.tenant_id,
        d.application_id,
        d.key_id,
      ]);
      return;
    }
    default: {
      // Fails to compile when an event type of the context has no case here.
      const unhandled: never = event;
      throw new Error(`no projection for ${(unhandled as TenancyEvent).type}`);
    }
  }
}
