import { describe, expect, it } from 'vitest';
import { deciderSpec } from '@tokenvault/cqrs/testing';
import { fold } from '@tokenvault/cqrs';
import { reactorDecider, type ReactorCommand, type ReactorEvent } from './reactor.ts';
import type { FormulaState } from './formula.ts';
import { domainErrorWith } from '@tokenvault/platform/testing';

const tenantId = '9d2f0a1e-0000-4000-8000-000000000001';
const formulaId = '9d2f0a1e-0000-4000-8000-000000000002';
const actorId = '9d2f0a1e-0000-4000-8000-000000000003';
const reactorId = '9d2f0a1e-0000-4000-8000-000000000004';
const applicationId = '9d2f0a1e-0000-4000-8000-000000000005';
const now = '2026-03-01T00:00:00.000Z';

const formula: FormulaState = {
  status: 'active',
  formula: {
    id: formulaId,
    tenant_id: tenantId,
    name: 'Charge',
    type: 'private',
    code: 'module.exports = () => ({});',
    configuration: [
      { name: 'API_KEY', type: 'string' },
      { name: 'RETRIES', type: 'number' },
    ],
    request_parameters: [],
    created_by: actorId,
    created_at: now,
  },
};
const configuration = { API_KEY: 'sk_test', RETRIES: 3 };
// The command handler seals the configuration before deciding: to the decider, an opaque string.
const sealed = 'sealed:create';
const resealed = 'sealed:update';
const application = {
  id: applicationId,
  found: { id: applicationId, type: 'private' as const, permissions: ['token:create'], rules: [] },
};
const caller = { permissions: ['token:create', 'token:read'], rules: [] };
const target = { reactorId, tenantId, actorId, now };
const create: ReactorCommand = {
  type: 'CreateReactor',
  formulaId,
  formula,
  name: 'Stripe',
  configuration,
  configurationCiphertext: sealed,
  application,
  caller,
  ...target,
};
const created: ReactorEvent = {
  type: 'ReactorCreated',
  data: {
    reactor_id: reactorId,
    tenant_id: tenantId,
    name: 'Stripe',
    formula_id: formulaId,
    configuration_ciphertext: sealed,
    application_id: applicationId,
    created_by: actorId,
    created_at: now,
  },
};
const update: ReactorCommand = {
  type: 'UpdateReactor',
  formula,
  name: 'Renamed',
  configuration: { API_KEY: 'sk_live', RETRIES: 1 },
  configurationCiphertext: resealed,
  caller,
  ...target,
};
const updated: ReactorEvent = {
  type: 'ReactorUpdated',
  data: {
    reactor_id: reactorId,
    tenant_id: tenantId,
    name: 'Renamed',
    configuration_ciphertext: resealed,
    modified_by: actorId,
    modified_at: now,
  },
};
const spec = deciderSpec(reactorDecider);

describe('reactor decider', () => {
  it('creates once, on an active formula', () => {
    spec.given([]).when(create).then([created]);
    spec.given([created]).when(create).thenThrows(domainErrorWith('already-exists'));
    spec
      .given([])
      .when({ ...create, formula: { status: 'absent' } })
      .thenThrows(domainErrorWith('not-found'));
    spec
      .given([])
      .when({ ...create, formula: { status: 'deleted' } })
      .thenThrows(domainErrorWith('not-found'));
  });

  it('checks the configuration against the formula: missing, wrong type and undeclared names are invalid', () => {
    spec
      .given([])
      .when({ ...create, configuration: { RETRIES: 3 } })
      .thenThrows(domainErrorWith('invalid', { field: 'body.configuration.API_KEY' }));
    spec
      .given([])
      .when({ ...create, configuration: { ...configuration, RETRIES: '3' } })
      .thenThrows(domainErrorWith('invalid', { field: 'body.configuration.RETRIES' }));
    spec
      .given([])
      .when({ ...create, configuration: { ...configuration, EXTRA: 1 } })
      .thenThrows(domainErrorWith('invalid', { field: 'body.configuration.EXTRA' }));
    spec
      .given([created])
      .when({ ...update, configuration: {} })
      .thenThrows(domainErrorWith('invalid', { field: 'body.configuration.API_KEY' }));
  });

  it('puts only the sealed configuration in its events and state, never the plaintext', () => {
    const events = [
      ...reactorDecider.decide(create, reactorDecider.initialState()),
      ...reactorDecider.decide(update, fold(reactorDecider, [created])),
    ];
    const state = fold(reactorDecider, events);
    expect(events.map((event) => event.data)).toMatchObject([
      { configuration_ciphertext: sealed },
      { configuration_ciphertext: resealed },
    ]);
    expect(state).toMatchObject({ status: 'active', reactor: { configuration_ciphertext: resealed } });
    const written = JSON.stringify([events, state]);
    expect(written).not.toContain('sk_test');
    expect(written).not.toContain('sk_live');
    expect(written).not.toMatch(/"configuration"/);
  });

  it('refuses a management application (invalid, naming body.application.id) and a missing one (not found)', () => {
    const management = {
      id: applicationId,
      found: { ...application.found, type: 'management' as const },
    };
    spec
      .given([])
      .when({ ...create, application: management })
      .thenThrows(domainErrorWith('invalid', { field: 'body.application.id' }));
    spec
      .given([])
      .when({ ...create, application: { id: applicationId, found: undefined } })
      .thenThrows(domainErrorWith('not-found'));
  });

  it('refuses an application holding what the caller does not (not allowed, naming body.application.id)', () => {
    const greater = {
      id: applicationId,
      found: { ...application.found, permissions: ['token:create', 'token:read', 'token:delete'] },
    };
    spec
      .given([])
      .when({ ...create, application: greater })
      .thenThrows(domainErrorWith('not-allowed', { field: 'body.application.id' }));
    spec
      .given([created])
      .when({ ...update, application: greater })
      .thenThrows(domainErrorWith('not-allowed', { field: 'body.application.id' }));
    const ruled = {
      ...caller,
      permissions: ['token:create'],
      rules: [{ container: '/', permissions: ['token:read'] }],
    };
    spec
      .given([])
      .when({
        ...create,
        caller: ruled,
        application: {
          id: applicationId,
          found: { ...application.found, rules: [{ container: '/pci/', permissions: ['token:read'] }] },
        },
      })
      .then([{ ...created }]);
  });

  it('changes a reactor, even to unbind its application, only for a key holding what it runs as now (not allowed, naming path.id)', () => {
    const greater = { ...application.found, permissions: ['token:create', 'token:read', 'token:delete'] };
    // `application: null` (or a PUT without one): the update binds nothing, yet the reactor ran as more.
    spec
      .given([created])
      .when({ ...update, bound: greater })
      .thenThrows(domainErrorWith('not-allowed', { field: 'path.id' }));
    // What the caller holds itself, it may unbind; an application gone since binds nothing.
    spec
      .given([created])
      .when({ ...update, bound: application.found })
      .then([updated]);
  });

  it('updates name, configuration and application (left out: removed), keeping the formula', () => {
    spec.given([created]).when(update).then([updated]);
    spec.given([]).when(update).thenThrows(domainErrorWith('not-found'));
    const state = fold(reactorDecider, [created, updated]);
    expect(state).toEqual({
      status: 'active',
      reactor: {
        id: reactorId,
        tenant_id: tenantId,
        name: 'Renamed',
        formula_id: formulaId,
        configuration_ciphertext: resealed,
        created_by: actorId,
        created_at: now,
        modified_by: actorId,
        modified_at: now,
      },
    });
  });

  it('deletes an active reactor, naming its formula; only for a key holding what it runs as (else not allowed, naming path.id)', () => {
    const remove: ReactorCommand = { type: 'DeleteReactor', caller, bound: application.found, ...target };
    spec
      .given([created])
      .when({ ...remove, bound: { ...application.found, permissions: ['token:create', 'token:delete'] } })
      .thenThrows(domainErrorWith('not-allowed', { field: 'path.id' }));
    spec
      .given([created])
      .when(remove)
      .then([
        {
          type: 'ReactorDeleted',
          data: {
            reactor_id: reactorId,
            tenant_id: tenantId,
            formula_id: formulaId,
            deleted_by: actorId,
            deleted_at: now,
          },
        },
      ]);
    spec
      .given([
        created,
        updated,
        {
          type: 'ReactorDeleted',
          data: {
            reactor_id: reactorId,
            tenant_id: tenantId,
            formula_id: formulaId,
            deleted_by: actorId,
            deleted_at: now,
          },
        },
      ])
      .when(remove)
      .thenThrows(domainErrorWith('not-found'));
  });
});
