import { describe, it } from 'vitest';
import { Problem } from '@tokenvault/platform';
import { deciderSpec } from '@tokenvault/cqrs/testing';
import { applicationDecider, type ApplicationCommand, type ApplicationEvent } from './application.ts';

const tenantId = '9d2f0a1e-0000-4000-8000-000000000001';
const applicationId = '9d2f0a1e-0000-4000-8000-000000000002';
const actorId = '9d2f0a1e-0000-4000-8000-000000000003';
const now = '2026-03-01T00:00:00.000Z';
const problem = (status: number) => (error: unknown) => error instanceof Problem && error.status === status;

const create: ApplicationCommand = {
  type: 'CreateApplication',
  applicationId,
  tenantId,
  name: 'Checkout',
  applicationType: 'private',
  permissions: ['token:create'],
  rules: [],
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
  actorId,
  now,
};
const remove: ApplicationCommand = { type: 'DeleteApplication', applicationId, tenantId, actorId, now };
const deleted: ApplicationEvent = {
  type: 'ApplicationDeleted',
  data: { application_id: applicationId, tenant_id: tenantId, deleted_by: actorId, deleted_at: now },
};
const spec = deciderSpec(applicationDecider);

describe('application decider', () => {
  it('creates once', () => {
    spec.given([]).when(create).then([created]);
    spec.given([created]).when(create).thenThrows(problem(409));
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

  it('deletes once; a deleted or absent application is a 404 for every change', () => {
    spec.given([created]).when(remove).then([deleted]);
    for (const command of [update, remove]) {
      spec.given([]).when(command).thenThrows(problem(404));
      spec.given([created, deleted]).when(command).thenThrows(problem(404));
    }
  });
});
