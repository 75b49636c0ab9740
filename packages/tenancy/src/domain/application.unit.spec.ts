import { describe, expect, it } from 'vitest';
import { deciderSpec } from '@tokenvault/cqrs/testing';
import {
  applicationDecider,
  firstKeyIdOf,
  maxKeysPerApplication,
  type ApplicationCommand,
  type ApplicationEvent,
} from './application.ts';
import { operatorGrants } from './grant-rule.ts';
import { domainErrorWith } from '@tokenvault/platform/testing';

const tenantId = '9d2f0a1e-0000-4000-8000-000000000001';
const applicationId = '9d2f0a1e-0000-4000-8000-000000000002';
const actorId = '9d2f0a1e-0000-4000-8000-000000000003';
const now = '2026-03-01T00:00:00.000Z';

const create: ApplicationCommand = {
  type: 'CreateApplication',
  applicationId,
  tenantId,
  name: 'Checkout',
  applicationType: 'private',
  permissions: ['token:create'],
  rules: [],
  caller: operatorGrants,
  keyHash: 'digest',
  actorId,
  now,
};
const created: ApplicationEvent = {
  type: 'ApplicationCreated',
  data: {
    application_id: applicationId,
    tenant_id: tenantId,
    name: 'Checkout',
    type: 'private',
    permissions: ['token:create'],
    rules: [],
    key_hash: 'digest',
    created_by: actorId,
    created_at: now,
  },
};
const update: ApplicationCommand = {
  type: 'UpdateApplication',
  applicationId,
  tenantId,
  name: 'Renamed',
  permissions: ['token:read'],
  rules: [{ container: '/pci/', permissions: ['token:read'] }],
  caller: operatorGrants,
  actorId,
  now,
};
const remove: ApplicationCommand = {
  type: 'DeleteApplication',
  applicationId,
  tenantId,
  caller: operatorGrants,
  actorId,
  now,
};
const deleted: ApplicationEvent = {
  type: 'ApplicationDeleted',
  data: { application_id: applicationId, tenant_id: tenantId, deleted_by: actorId, deleted_at: now },
};
const spec = deciderSpec(applicationDecider);
/** A caller's request quota, with the service default at 6,000 per minute. */
const quota = (requestsPerMinute: number) => ({ requestsPerMinute, serviceDefaultPerMinute: 6000 });

describe('application decider', () => {
  it('creates once', () => {
    spec.given([]).when(create).then([created]);
    spec.given([created]).when(create).thenThrows(domainErrorWith('already-exists'));
  });

  it('updates a live application', () => {
    spec
      .given([created])
      .when(update)
      .then([
        {
          type: 'ApplicationUpdated',
          data: {
            application_id: applicationId,
            tenant_id: tenantId,
            name: 'Renamed',
            permissions: ['token:read'],
            rules: [{ container: '/pci/', permissions: ['token:read'] }],
            modified_by: actorId,
            modified_at: now,
          },
        },
      ]);
  });

  it('deletes once; a deleted or absent application is not found for every change', () => {
    spec.given([created]).when(remove).then([deleted]);
    for (const command of [update, remove]) {
      spec.given([]).when(command).thenThrows(domainErrorWith('not-found'));
      spec.given([created, deleted]).when(command).thenThrows(domainErrorWith('not-found'));
    }
  });

  it('deletes only what the caller could have granted (not allowed, naming path.id)', () => {
    const lesser = {
      ...quota(6000),
      type: 'private' as const,
      permissions: ['application:delete'],
      rules: [],
    };
    spec
      .given([created])
      .when({ ...remove, caller: lesser })
      .thenThrows(domainErrorWith('not-allowed'));
    const peer = {
      ...quota(6000),
      type: 'private' as const,
      permissions: ['application:delete', 'token:create'],
      rules: [],
    };
    spec
      .given([created])
      .when({ ...remove, caller: peer })
      .then([deleted]);
  });

  it('grants nothing the caller does not hold, on create and on update (not allowed, naming the field)', () => {
    const reader = {
      ...quota(6000),
      type: 'private' as const,
      permissions: ['application:create', 'token:create'],
      rules: [],
    };
    spec
      .given([])
      .when({ ...create, caller: reader, permissions: ['token:read'] })
      .thenThrows(domainErrorWith('not-allowed', { field: 'body.permissions' }));
    spec
      .given([])
      .when({ ...create, caller: reader, applicationType: 'management', permissions: [] })
      .thenThrows(domainErrorWith('not-allowed', { field: 'body.type' }));
    spec
      .given([created])
      .when({ ...update, caller: reader })
      .thenThrows(domainErrorWith('not-allowed', { field: 'body.permissions' }));
    const managementApplication: ApplicationEvent = {
      ...created,
      data: { ...created.data, type: 'management' },
    };
    spec
      .given([managementApplication])
      .when({ ...update, caller: reader, permissions: [], rules: [] })
      .thenThrows(domainErrorWith('not-allowed', { field: 'path.id' }));
  });

  it('gives no application a larger request quota than the caller holds, nor changes one that has more', () => {
    const limited = { ...operatorGrants, ...quota(100) };
    const ratedAt = (requests_per_minute: number) =>
      ({ ...created, data: { ...created.data, rate_limit: { requests_per_minute } } }) as ApplicationEvent;
    // Asking for more than the caller's own 100, or for none (the default 6,000), is refused.
    spec
      .given([])
      .when({ ...create, caller: limited, rateLimit: { requests_per_minute: 101 } })
      .thenThrows(domainErrorWith('not-allowed', { field: 'body.rate_limit.requests_per_minute' }));
    spec
      .given([])
      .when({ ...create, caller: limited })
      .thenThrows(domainErrorWith('not-allowed', { field: 'body.rate_limit.requests_per_minute' }));
    spec
      .given([ratedAt(100)])
      .when({ ...update, caller: limited, rateLimit: { requests_per_minute: 1_000_000 } })
      .thenThrows(domainErrorWith('not-allowed', { field: 'body.rate_limit.requests_per_minute' }));
    // Leaving rate_limit out of a replacement would lift it to the default: refused too.
    spec
      .given([ratedAt(100)])
      .when({ ...update, caller: limited })
      .thenThrows(domainErrorWith('not-allowed', { field: 'body.rate_limit.requests_per_minute' }));
    // An application with a larger quota is not the caller's to change or delete.
    spec
      .given([ratedAt(5000)])
      .when({ ...update, caller: limited, rateLimit: { requests_per_minute: 50 } })
      .thenThrows(domainErrorWith('not-allowed', { field: 'path.id' }));
    spec
      .given([ratedAt(5000)])
      .when({ ...remove, caller: limited })
      .thenThrows(domainErrorWith('not-allowed', { field: 'path.id' }));
    // At or below its own quota is allowed; with RATE_LIMIT_PER_MINUTE=0 (no default) only an explicit quota is.
    spec
      .given([])
      .when({ ...create, caller: limited, rateLimit: { requests_per_minute: 100 } })
      .then([
        {
          ...created,
          data: { ...created.data, rate_limit: { requests_per_minute: 100 } },
        },
      ]);
    const unlimitedDefault = { ...limited, serviceDefaultPerMinute: Infinity };
    spec
      .given([])
      .when({ ...create, caller: unlimitedDefault })
      .thenThrows(domainErrorWith('not-allowed', { field: 'body.rate_limit.requests_per_minute' }));
  });

  it('keeps a public application to token:create when it is updated (invalid)', () => {
    const publicApplication = { ...created, data: { ...created.data, type: 'public' } } as ApplicationEvent;
    spec.given([publicApplication]).when(update).thenThrows(domainErrorWith('invalid'));
    spec
      .given([publicApplication])
      .when({ ...update, permissions: ['token:create'], rules: [] })
      .then([
        {
          type: 'ApplicationUpdated',
          data: {
            application_id: applicationId,
            tenant_id: tenantId,
            name: 'Renamed',
            permissions: ['token:create'],
            rules: [],
            modified_by: actorId,
            modified_at: now,
          },
        },
      ]);
  });

  describe('keys', () => {
    const keyId = '9d2f0a1e-0000-4000-8000-000000000004';
    const later = '2026-03-02T00:00:00.000Z';
    const createKey: ApplicationCommand = {
      type: 'CreateApplicationKey',
      applicationId,
      tenantId,
      keyId,
      keyHash: 'second digest',
      expiresAt: later,
      caller: operatorGrants,
      actorId,
      now,
    };
    const keyCreated: ApplicationEvent = {
      type: 'ApplicationKeyCreated',
      data: {
        application_id: applicationId,
        tenant_id: tenantId,
        key_id: keyId,
        key_hash: 'second digest',
        expires_at: later,
        created_by: actorId,
        created_at: now,
      },
    };
    const deleteKey = (id: string): ApplicationCommand => ({
      type: 'DeleteApplicationKey',
      applicationId,
      tenantId,
      keyId: id,
      caller: operatorGrants,
      actorId,
      now,
    });
    const keyDeleted = (id: string): ApplicationEvent => ({
      type: 'ApplicationKeyDeleted',
      data: {
        application_id: applicationId,
        tenant_id: tenantId,
        key_id: id,
        deleted_by: actorId,
        deleted_at: now,
      },
    });
    /** What the decider holds of the application's keys after these events. */
    const keysAfter = (events: ApplicationEvent[]) => {
      const state = events.reduce(
        (folded, event) => applicationDecider.evolve(folded, event),
        applicationDecider.initialState(),
      );
      return state.status === 'active' ? state.keys.map((key) => key.id) : undefined;
    };

    it('an application is created with one key, whose id is the application’s own', () => {
      expect(keysAfter([created])).toEqual([firstKeyIdOf(applicationId)]);
      expect(firstKeyIdOf(applicationId)).toBe(applicationId);
    });

    it('creates a key with its digest and expiry; its first key and the new one can each be deleted', () => {
      spec.given([created]).when(createKey).then([keyCreated]);
      const { expiresAt: _never, ...forever } = createKey;
      const { expires_at: _none, ...foreverData } = (keyCreated as { data: Record<string, unknown> }).data;
      spec
        .given([created])
        .when(forever)
        .then([{ type: 'ApplicationKeyCreated', data: foreverData } as ApplicationEvent]);
      spec
        .given([created, keyCreated])
        .when(deleteKey(applicationId))
        .then([keyDeleted(applicationId)]);
      spec
        .given([created, keyCreated])
        .when(deleteKey(keyId))
        .then([keyDeleted(keyId)]);
      expect(keysAfter([created, keyCreated, keyDeleted(applicationId)])).toEqual([keyId]);
    });

    it('no key outlives the key that minted it: none asked for takes its expiry, a later one is invalid (naming body.expires_at)', () => {
      const expiring = { ...operatorGrants, keyExpiresAt: '2026-03-01T00:00:05.000Z' };
      const { expiresAt: _never, ...forever } = createKey;
      const { expires_at: _none, ...foreverData } = (keyCreated as { data: Record<string, unknown> }).data;
      spec
        .given([created])
        .when({ ...forever, caller: expiring })
        .then([
          {
            type: 'ApplicationKeyCreated',
            data: { ...foreverData, expires_at: expiring.keyExpiresAt },
          } as ApplicationEvent,
        ]);
      spec
        .given([created])
        .when({ ...createKey, caller: expiring })
        .thenThrows(domainErrorWith('invalid', { field: 'body.expires_at' }));
      const sooner = '2026-03-01T00:00:04.000Z';
      spec
        .given([created])
        .when({ ...createKey, expiresAt: sooner, caller: expiring })
        .then([{ ...keyCreated, data: { ...keyCreated.data, expires_at: sooner } }]);
      // An application it creates gets its first key with the same bound.
      spec
        .given([])
        .when({ ...create, caller: expiring })
        .then([
          {
            ...created,
            data: { ...created.data, key_expires_at: expiring.keyExpiresAt },
          },
        ]);
      expect(
        (() => {
          const state = applicationDecider.evolve(applicationDecider.initialState(), {
            ...created,
            data: { ...created.data, key_expires_at: expiring.keyExpiresAt },
          });
          return state.status === 'active' ? state.keys[0]?.expires_at : undefined;
        })(),
      ).toBe(expiring.keyExpiresAt);
    });

    it('a key that is not the application’s, or was deleted, is not found; so is every key of a deleted application', () => {
      spec.given([created]).when(deleteKey(keyId)).thenThrows(domainErrorWith('not-found'));
      spec
        .given([created, keyCreated, keyDeleted(keyId)])
        .when(deleteKey(keyId))
        .thenThrows(domainErrorWith('not-found'));
      for (const command of [createKey, deleteKey(applicationId)]) {
        spec.given([]).when(command).thenThrows(domainErrorWith('not-found'));
        spec.given([created, deleted]).when(command).thenThrows(domainErrorWith('not-found'));
      }
    });

    it('no key mints or revokes a key of an application holding what it does not (not allowed, naming path.id)', () => {
      const lesser = {
        ...quota(6000),
        type: 'private' as const,
        permissions: ['application:update'],
        rules: [],
      };
      spec
        .given([created])
        .when({ ...createKey, caller: lesser })
        .thenThrows(domainErrorWith('not-allowed', { field: 'path.id' }));
      spec
        .given([created, keyCreated])
        .when({ ...deleteKey(keyId), caller: lesser })
        .thenThrows(domainErrorWith('not-allowed', { field: 'path.id' }));
      // A rule on /pci/ does not hold token:create everywhere, nor a smaller quota the default one.
      const scoped = { ...lesser, rules: [{ container: '/pci/', permissions: ['token:create'] }] };
      spec
        .given([created])
        .when({ ...createKey, caller: scoped })
        .thenThrows(domainErrorWith('not-allowed', { field: 'path.id' }));
      spec
        .given([created])
        .when({ ...createKey, caller: { ...operatorGrants, ...quota(100) } })
        .thenThrows(domainErrorWith('not-allowed', { field: 'path.id' }));
      // A peer holding all it holds may.
      const peer = { ...lesser, permissions: ['application:update', 'token:create'] };
      spec
        .given([created])
        .when({ ...createKey, caller: peer })
        .then([keyCreated]);
    });

    it('refuses a key expiring now or before (invalid, naming body.expires_at)', () => {
      for (const expiresAt of [now, '2026-02-28T23:59:59.999Z']) {
        spec
          .given([created])
          .when({ ...createKey, expiresAt })
          .thenThrows(domainErrorWith('invalid', { field: 'body.expires_at' }));
      }
    });

    it(`holds at most ${maxKeysPerApplication} keys at once (conflict); deleting one makes room`, () => {
      const more = Array.from({ length: maxKeysPerApplication - 1 }, (_, index) => ({
        ...keyCreated,
        data: { ...keyCreated.data, key_id: `key-${index}`, key_hash: `digest-${index}` },
      })) as ApplicationEvent[];
      spec
        .given([created, ...more])
        .when(createKey)
        .thenThrows(domainErrorWith('conflict'));
      spec
        .given([created, ...more, keyDeleted('key-0')])
        .when(createKey)
        .then([keyCreated]);
    });

    it('keeps the keys across an update of the application', () => {
      const updated: ApplicationEvent = {
        type: 'ApplicationUpdated',
        data: {
          application_id: applicationId,
          tenant_id: tenantId,
          name: 'Renamed',
          permissions: ['token:create'],
          rules: [],
          modified_by: actorId,
          modified_at: now,
        },
      };
      expect(keysAfter([created, keyCreated, updated])).toEqual([applicationId, keyId]);
    });
  });
});
