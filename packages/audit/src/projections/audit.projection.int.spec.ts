import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { type PoolClient } from '@tokenvault/platform';
import { projectionSpec, recordedEvent, useTestPool } from '@tokenvault/cqrs/testing';
import type { EventMetadata, RecordedEvent } from '@tokenvault/eventstore';
import { auditMigrations } from '../migrations.ts';
import { logMappings } from '../mappings.ts';
import { auditProjection } from './audit.projection.ts';

const tenant: string = randomUUID();
const otherTenant: string = randomUUID();
const actor = randomUUID();
const id = 'entity-1';

const withActor = (tenantId: string): Partial<EventMetadata> => ({
  tenant_id: tenantId,
  actor_id: actor,
  actor_type: 'application',
});

/** An event of `type` with the fields its mapping reads (ids, a token's type, a parent). */
const eventOf = (type: string, tenantId = tenant, metadata = withActor(tenantId)) =>
  recordedEvent(
    type,
    {
      tenant_id: tenantId,
      user_id: id,
      member_id: id,
      invitation_id: id,
      application_id: id,
      key_id: id,
      token_id: id,
      child_id: id,
      parent_id: 'parent-1',
      type: 'card',
      formula_id: id,
      reactor_id: id,
      proxy_id: id,
      webhook_id: id,
      intent_id: id,
      version: 2,
      master_key_version: 'b',
    },
    { metadata },
  );

/** What each event type's log row says, as the API shows it. */
const expectedEntries: Record<string, { entity_type: string; operation: string; message: string }> = {
  TenantCreated: { entity_type: 'tenant', operation: 'create', message: 'Tenant created' },
  TenantUpdated: { entity_type: 'tenant', operation: 'update', message: 'Tenant updated' },
  TenantDeleted: { entity_type: 'tenant', operation: 'delete', message: 'Tenant deleted' },
  UserRegistered: { entity_type: 'user', operation: 'create', message: 'User registered' },
  MemberAdded: { entity_type: 'tenant_member', operation: 'create', message: 'Tenant member added' },
  MemberRemoved: { entity_type: 'tenant_member', operation: 'delete', message: 'Tenant member removed' },
  InvitationCreated: {
    entity_type: 'tenant_invitation',
    operation: 'create',
    message: 'Tenant invitation created',
  },
  InvitationResent: {
    entity_type: 'tenant_invitation',
    operation: 'update',
    message: 'Tenant invitation resent',
  },
  InvitationDeleted: {
    entity_type: 'tenant_invitation',
    operation: 'delete',
    message: 'Tenant invitation deleted',
  },
  InvitationAccepted: {
    entity_type: 'tenant_invitation',
    operation: 'delete',
    message: 'Tenant invitation accepted',
  },
  ApplicationCreated: { entity_type: 'application', operation: 'create', message: 'Application created' },
  ApplicationUpdated: { entity_type: 'application', operation: 'update', message: 'Application updated' },
  ApplicationDeleted: { entity_type: 'application', operation: 'delete', message: 'Application deleted' },
  ApplicationKeyCreated: {
    entity_type: 'application_key',
    operation: 'create',
    message: 'Application key created',
  },
  ApplicationKeyDeleted: {
    entity_type: 'application_key',
    operation: 'delete',
    message: 'Application key deleted',
  },
  TokenCreated: { entity_type: 'card', operation: 'create', message: 'Token created' },
  TokenUpdated: { entity_type: 'card', operation: 'update', message: 'Token updated' },
  TokenDeleted: { entity_type: 'card', operation: 'delete', message: 'Token deleted' },
  TokenAssociated: {
    entity_type: 'card',
    operation: 'update',
    message: 'Token associated as a child of parent-1',
  },
  TokenDissociated: {
    entity_type: 'card',
    operation: 'update',
    message: 'Token no longer a child of parent-1',
  },
  TokenRead: { entity_type: 'card', operation: 'read', message: 'Token retrieved' },
  ReactorFormulaCreated: {
    entity_type: 'reactor_formula',
    operation: 'create',
    message: 'Reactor formula created',
  },
  ReactorFormulaUpdated: {
    entity_type: 'reactor_formula',
    operation: 'update',
    message: 'Reactor formula updated',
  },
  ReactorFormulaDeleted: {
    entity_type: 'reactor_formula',
    operation: 'delete',
    message: 'Reactor formula deleted',
  },
  ReactorCreated: { entity_type: 'reactor', operation: 'create', message: 'Reactor created' },
  ReactorUpdated: { entity_type: 'reactor', operation: 'update', message: 'Reactor updated' },
  ReactorDeleted: { entity_type: 'reactor', operation: 'delete', message: 'Reactor deleted' },
  ProxyCreated: { entity_type: 'proxy', operation: 'create', message: 'Proxy created' },
  ProxyUpdated: { entity_type: 'proxy', operation: 'update', message: 'Proxy updated' },
  ProxyDeleted: { entity_type: 'proxy', operation: 'delete', message: 'Proxy deleted' },
  TokenReencrypted: {
    entity_type: 'card',
    operation: 'update',
    message: 'Token re-encrypted under a new key (old key destroyed)',
  },
  TokenCvcRemoved: {
    entity_type: 'card',
    operation: 'update',
    message: 'Card CVC removed (its retention time passed; old key destroyed)',
  },
  TokenIntentCreated: { entity_type: 'token_intent', operation: 'create', message: 'Token intent created' },
  TokenIntentConverted: {
    entity_type: 'token_intent',
    operation: 'delete',
    message: 'Token intent made token entity-1 (its key destroyed)',
  },
  TokenIntentDeleted: {
    entity_type: 'token_intent',
    operation: 'delete',
    message: 'Token intent deleted (its key destroyed)',
  },
  TokenIntentExpired: {
    entity_type: 'token_intent',
    operation: 'delete',
    message: 'Token intent expired (its key destroyed)',
  },
  WebhookCreated: { entity_type: 'webhook', operation: 'create', message: 'Webhook created' },
  WebhookUpdated: { entity_type: 'webhook', operation: 'update', message: 'Webhook updated' },
  WebhookDeleted: { entity_type: 'webhook', operation: 'delete', message: 'Webhook deleted' },
  WebhookDisabled: {
    entity_type: 'webhook',
    operation: 'update',
    message: 'Webhook disabled by its failed deliveries',
  },
  WebhookSigningKeyRotated: {
    entity_type: 'webhook_signing_key',
    operation: 'create',
    message: 'Webhook signing key made',
  },
  TenantKeyRotated: {
    entity_type: 'tenant',
    operation: 'update',
    message: 'Tenant key rotated to version 2',
  },
  TenantKeyRewrapped: {
    entity_type: 'tenant',
    operation: 'update',
    message: 'Tenant key version 2 re-wrapped under master key b',
  },
};

interface LogRow {
  tenant_id: string;
  created_at: Date;
  position: number;
  event_id: string;
  actor_id: string | null;
  actor_type: string | null;
  entity_type: string;
  entity_id: string;
  operation: string;
  message: string;
}

const logs = async (tx: PoolClient, tenantId = tenant) =>
  (
    await tx.query<LogRow>('SELECT * FROM audit_logs WHERE tenant_id = $1 ORDER BY created_at, position', [
      tenantId,
    ])
  ).rows;

const eventIds = (events: readonly RecordedEvent[]) => events.map((event) => event.event_id);

describe('auditProjection', () => {
  const db = useTestPool(auditMigrations);
  const spec = () => projectionSpec(auditProjection, db.pool);

  it('handles every event type that has a log mapping (and this spec names them all)', () => {
    // TokensRead and TokensReadBatch have rows of their own, one per token (their own tests below).
    const named = [...Object.keys(expectedEntries), 'TokensRead', 'TokensReadBatch'].sort();
    expect([...auditProjection.handles].sort()).toEqual(named);
    expect(Object.keys(logMappings).sort()).toEqual(named);
  });

  it('writes one row per event: who, when and where from the event, what from its mapping', async () => {
    const events = Object.keys(expectedEntries)
      .filter((type) => type !== 'TenantDeleted')
      .map((type) => eventOf(type));
    await spec()
      .given([])
      .when(events)
      .then(async (tx) => {
        expect(await logs(tx)).toEqual(
          events.map((event) => ({
            tenant_id: tenant,
            created_at: event.created_at,
            // Room for the rows of a read of many tokens: the event's position times 128.
            position: Number(event.position.prepare) * 128,
            event_id: event.event_id,
            actor_id: actor,
            actor_type: 'application',
            // A tenant's events name the tenant; the others the id in their data.
            entity_id: event.type.startsWith('Tenant') ? tenant : id,
            ...expectedEntries[event.type],
          })),
        );
      });
  });

  it('keeps the time to the millisecond and leaves an absent actor empty', async () => {
    const event = recordedEvent(
      'TokenRead',
      { tenant_id: tenant, token_id: 't-1', type: 'token' },
      { metadata: { tenant_id: tenant }, created_at: new Date('2026-02-03T04:05:06.789Z') },
    );
    await spec()
      .given([])
      .when([event])
      .then(async (tx) => {
        expect(await logs(tx)).toEqual([
          expect.objectContaining({
            created_at: new Date('2026-02-03T04:05:06.789Z'),
            actor_id: null,
            actor_type: null,
            entity_type: 'token',
            entity_id: 't-1',
            operation: 'read',
          }),
        ]);
      });
  });

  it('files each row under the tenant of the event’s metadata', async () => {
    // A user belongs to no tenant: its registration is filed under its metadata's tenant.
    const registered = recordedEvent(
      'UserRegistered',
      { user_id: 'u-1', email: 'ann@example.com' },
      { metadata: withActor(otherTenant) },
    );
    await spec()
      .given([])
      .when([eventOf('TokenCreated'), registered])
      .then(async (tx) => {
        expect((await logs(tx)).map((row) => row.entity_id)).toEqual([id]);
        expect((await logs(tx, otherTenant)).map((row) => row.event_id)).toEqual([registered.event_id]);
      });
  });

  it('is idempotent: events applied again add no rows', async () => {
    const events = [eventOf('TokenCreated'), eventOf('TokenRead'), eventOf('TokenUpdated')];
    await spec()
      .given(events)
      .when(events)
      .then(async (tx) => expect((await logs(tx)).map((row) => row.event_id)).toEqual(eventIds(events)));
  });

  it('TenantDeleted removes the tenant’s rows, of earlier batches and of its own, except its own row, and no other tenant’s', async () => {
    const earlier = [eventOf('TenantCreated'), eventOf('TokenCreated'), eventOf('TokenCreated', otherTenant)];
    const deletion = eventOf('TenantDeleted');
    const sameBatch = [eventOf('TokenDeleted'), deletion, eventOf('TokenRead', otherTenant)];
    await spec()
      .given(earlier)
      .when(sameBatch)
      .then(async (tx) => {
        expect(await logs(tx)).toEqual([
          expect.objectContaining({
            event_id: deletion.event_id,
            entity_type: 'tenant',
            entity_id: tenant,
            operation: 'delete',
            message: 'Tenant deleted',
          }),
        ]);
        expect((await logs(tx, otherTenant)).map((row) => row.event_id)).toEqual(
          eventIds([earlier[2]!, sameBatch[2]!]),
        );
      });
  });

  it('writes a row per token of a TokensRead, in the order it names them, and once only', async () => {
    const read = recordedEvent(
      'TokensRead',
      {
        tenant_id: tenant,
        tokens: [
          { token_id: 'a', type: 'card' },
          { token_id: 'b', type: 'bank' },
          { token_id: 'c', type: 'token' },
        ],
        read_by: actor,
        read_at: new Date().toISOString(),
      },
      { metadata: withActor(tenant) },
    );
    await spec()
      .given([read])
      .when([read])
      .then(async (tx) => {
        expect(
          (await logs(tx)).map((row) => [
            row.position,
            row.event_id,
            row.entity_type,
            row.entity_id,
            row.operation,
          ]),
        ).toEqual(
          ['a', 'b', 'c'].map((token, index) => [
            Number(read.position.prepare) * 128 + index,
            read.event_id,
            ['card', 'bank', 'token'][index],
            token,
            'read',
          ]),
        );
      });
  });

  it('writes a row per token of each read of a TokensReadBatch under the read’s own tenant and reader, once only', async () => {
    const otherActor = randomUUID();
    const readAt = new Date().toISOString();
    const read = (tenantId: string, readBy: string, tokens: string[]) => ({
      tenant_id: tenantId,
      tokens: tokens.map((token) => ({ token_id: token, type: 'token' })),
      read_by: readBy,
      reader_type: 'application',
      correlation_id: randomUUID(),
      read_at: readAt,
    });
    const batch = recordedEvent(
      'TokensReadBatch',
      {
        reads: [
          read(tenant, actor, ['mine-1']),
          read(otherTenant, otherActor, ['theirs-1', 'theirs-2']),
          {
            ...read(tenant, actor, ['mine-2']),
            tokens: [{ token_id: 'mine-2', type: 'card', transform: 'mask' }],
          },
        ],
      },
      // The batch's own metadata names none of its tenants.
      { metadata: { tenant_id: '00000000-0000-0000-0000-000000000000', actor_type: 'system' } },
    );
    const rowsOf = async (tx: PoolClient, tenantId: string) =>
      (await logs(tx, tenantId)).map((row) => [
        row.position - Number(batch.position.prepare) * 128,
        row.event_id,
        row.actor_id,
        row.actor_type,
        row.entity_type,
        row.entity_id,
        row.message,
      ]);
    await spec()
      .given([batch])
      .when([batch])
      .then(async (tx) => {
        expect(await rowsOf(tx, tenant)).toEqual([
          [0, batch.event_id, actor, 'application', 'token', 'mine-1', 'Token retrieved'],
          [3, batch.event_id, actor, 'application', 'card', 'mine-2', 'Token retrieved (masked)'],
        ]);
        expect(await rowsOf(tx, otherTenant)).toEqual([
          [1, batch.event_id, otherActor, 'application', 'token', 'theirs-1', 'Token retrieved'],
          [2, batch.event_id, otherActor, 'application', 'token', 'theirs-2', 'Token retrieved'],
        ]);
        expect(await logs(tx, '00000000-0000-0000-0000-000000000000')).toEqual([]);
      });
  });
});
