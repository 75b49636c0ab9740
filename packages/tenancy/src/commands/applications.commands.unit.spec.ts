import { describe, expect, it } from 'vitest';
import { fixedClock, storedEvents, testPrincipal } from '@tokenvault/cqrs/testing';
import { InMemoryEventStore } from '@tokenvault/eventstore/testing';
import { problemWith } from '@tokenvault/platform/testing';
import { hashApiKey } from '../domain/api-key.ts';
import { streams } from '../domain/tenancy.events.ts';
import { ApplicationCommands } from './applications.commands.ts';

const tenantId = '4c8d2e51-0000-4000-8000-000000000001';
const memberUserId = '4c8d2e51-0000-4000-8000-000000000002';
const now = '2026-03-01T00:00:00.000Z';
const correlationId = 'request-1';
const body = {
  name: 'Checkout',
  type: 'private' as const,
  permissions: ['token:create' as const],
  rules: [],
};

function given() {
  const store = new InMemoryEventStore();
  return { store, commands: new ApplicationCommands(store, 600, fixedClock(now)) };
}

describe('ApplicationCommands against an in-memory event store', () => {
  it('create by a member: appends ApplicationCreated with the hash of the key it answers', async () => {
    const { store, commands } = given();
    const member = testPrincipal(tenantId, memberUserId, [], { actorType: 'user' });
    const { application, key } = await commands.create(member, body, correlationId);
    expect(await storedEvents(store, streams.application(tenantId, application.id))).toEqual([
      {
        type: 'ApplicationCreated',
        data: {
          application_id: application.id,
          tenant_id: tenantId,
          name: 'Checkout',
          type: 'private',
          permissions: ['token:create'],
          rules: [],
          key_hash: hashApiKey(key),
          created_by: memberUserId,
          created_at: now,
        },
        metadata: {
          tenant_id: tenantId,
          actor_id: memberUserId,
          actor_type: 'user',
          correlation_id: correlationId,
        },
      },
    ]);
  });

  it('an application caller whose own application is gone is a 401, and nothing is appended', async () => {
    const { store, commands } = given();
    const gone = testPrincipal(tenantId, '4c8d2e51-0000-4000-8000-000000000009', ['application:create']);
    await expect(commands.create(gone, body, correlationId)).rejects.toSatisfy(problemWith(401));
    expect(await store.headPosition()).toBeUndefined();
  });

  it('delete: appends ApplicationDeleted; deleting it again is a 404', async () => {
    const { store, commands } = given();
    const member = testPrincipal(tenantId, memberUserId, [], { actorType: 'user' });
    const { application } = await commands.create(member, body, correlationId);
    await commands.delete(member, application.id, correlationId);
    expect((await storedEvents(store, streams.application(tenantId, application.id))).at(-1)).toMatchObject({
      type: 'ApplicationDeleted',
      data: {
        application_id: application.id,
        tenant_id: tenantId,
        deleted_by: memberUserId,
        deleted_at: now,
      },
    });
    await expect(commands.delete(member, application.id, correlationId)).rejects.toSatisfy(problemWith(404));
  });

  describe('keys', () => {
    const member = testPrincipal(tenantId, memberUserId, [], { actorType: 'user' });

    it('createKey: appends ApplicationKeyCreated with the digest of the key it answers once, prefixed by the type', async () => {
      const { store, commands } = given();
      const { application } = await commands.create(member, body, correlationId);
      const expiresAt = '2026-04-01T02:00:00+02:00';
      const { key } = await commands.createKey(
        member,
        application.id,
        { expires_at: expiresAt },
        correlationId,
      );
      expect(key).toEqual({
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        tenant_id: tenantId,
        application_id: application.id,
        expires_at: '2026-04-01T00:00:00.000Z',
        created_by: memberUserId,
        created_at: now,
        key: expect.stringMatching(/^tv_prv_/),
      });
      const events = await storedEvents(store, streams.application(tenantId, application.id));
      expect(events.at(-1)).toEqual({
        type: 'ApplicationKeyCreated',
        data: {
          application_id: application.id,
          tenant_id: tenantId,
          key_id: key.id,
          key_hash: hashApiKey(key.key),
          expires_at: '2026-04-01T00:00:00.000Z',
          created_by: memberUserId,
          created_at: now,
        },
        metadata: {
          tenant_id: tenantId,
          actor_id: memberUserId,
          actor_type: 'user',
          correlation_id: correlationId,
        },
      });
      expect(JSON.stringify(events)).not.toContain(key.key);
      // Without a body (Basis Theory's SDK sends none) the key never expires.
      const { key: forever } = await commands.createKey(member, application.id, undefined, correlationId);
      expect(forever).not.toHaveProperty('expires_at');
    });

    it('createKey of an application that is not there is a 404, and nothing is appended', async () => {
      const { store, commands } = given();
      await expect(
        commands.createKey(member, '4c8d2e51-0000-4000-8000-000000000008', undefined, correlationId),
      ).rejects.toSatisfy(problemWith(404));
      expect(await store.headPosition()).toBeUndefined();
    });

    it('createKey by a key holding less than the application is a 403 on path.id, and nothing is appended', async () => {
      const { store, commands } = given();
      const writer = await commands.create(
        member,
        { ...body, permissions: ['application:update', 'token:create'] },
        correlationId,
      );
      const target = await commands.create(
        member,
        { ...body, type: 'management', permissions: ['tenant:delete'] },
        correlationId,
      );
      const head = await store.headPosition();
      const caller = testPrincipal(tenantId, writer.application.id, ['application:update', 'token:create']);
      await expect(
        commands.createKey(caller, target.application.id, undefined, correlationId),
      ).rejects.toSatisfy(problemWith(403, 'path.id'));
      expect(await store.headPosition()).toEqual(head);
    });

    it('deleteKey: appends ApplicationKeyDeleted; the first key is the application’s id; deleting it again is a 404', async () => {
      const { store, commands } = given();
      const { application } = await commands.create(member, body, correlationId);
      await commands.deleteKey(member, application.id, application.id, correlationId);
      expect((await storedEvents(store, streams.application(tenantId, application.id))).at(-1)).toMatchObject(
        {
          type: 'ApplicationKeyDeleted',
          data: {
            application_id: application.id,
            tenant_id: tenantId,
            key_id: application.id,
            deleted_by: memberUserId,
            deleted_at: now,
          },
        },
      );
      await expect(
        commands.deleteKey(member, application.id, application.id, correlationId),
      ).rejects.toSatisfy(problemWith(404));
    });
  });
});
