import { describe, it } from 'vitest';
import { deciderSpec } from '@tokenvault/cqrs/testing';
import { applicationDecider, type ApplicationCommand, type ApplicationEvent } from './application.ts';
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
});
