import { describe, it } from 'vitest';
import { deciderSpec } from '@tokenvault/cqrs/testing';
import { tenantDecider, type TenantCommand, type TenantEvent } from './tenant.ts';

const tenantId = '9d2f0a1e-0000-4000-8000-000000000001';
const actorId = '9d2f0a1e-0000-4000-8000-000000000003';
const now = '2026-03-01T00:00:00.000Z';
const created: TenantEvent = {
  type: 'TenantCreated',
  data: {
    tenant_id: tenantId,
    name: 'Acme',
    owner_id: actorId,
    settings: { deduplicate_tokens: 'false' },
    created_by: actorId,
    created_at: now,
  },
};
const update = (name: string, settings?: { deduplicate_tokens: 'true' | 'false' }): TenantCommand => ({
  type: 'UpdateTenant',
  tenantId,
  name,
  ...(settings ? { settings } : {}),
  actorId,
  now,
});
const spec = deciderSpec(tenantDecider);

describe('tenant decider', () => {
  it('an update that changes nothing appends nothing (PUT is idempotent)', () => {
    spec.given([created]).when(update('Acme')).then([]);
    spec
      .given([created])
      .when(update('Acme', { deduplicate_tokens: 'false' }))
      .then([]);
  });

  it('an update that changes the name or a setting is recorded, settings left out kept', () => {
    const updated = (name: string, deduplicate: 'true' | 'false'): TenantEvent => ({
      type: 'TenantUpdated',
      data: {
        tenant_id: tenantId,
        name,
        settings: { deduplicate_tokens: deduplicate },
        modified_by: actorId,
        modified_at: now,
      },
    });
    spec
      .given([created])
      .when(update('Renamed'))
      .then([updated('Renamed', 'false')]);
    spec
      .given([created])
      .when(update('Acme', { deduplicate_tokens: 'true' }))
      .then([updated('Acme', 'true')]);
  });
});
