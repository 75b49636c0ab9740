import { describe, expect, it } from 'vitest';
import { deciderSpec } from '@tokenvault/cqrs/testing';
import { fold } from '@tokenvault/cqrs';
import { formulaDecider, type FormulaCommand, type FormulaEvent } from './formula.ts';
import type { FormulaDefinition } from './reactors.events.ts';
import type { DomainError } from '@tokenvault/platform';
import { domainErrorWith } from '@tokenvault/platform/testing';

const tenantId = '9d2f0a1e-0000-4000-8000-000000000001';
const formulaId = '9d2f0a1e-0000-4000-8000-000000000002';
const actorId = '9d2f0a1e-0000-4000-8000-000000000003';
const now = '2026-03-01T00:00:00.000Z';
const later = '2026-03-02T00:00:00.000Z';

const definition: FormulaDefinition = {
  name: 'Charge',
  type: 'private',
  code: 'module.exports = async function (req) { return { raw: req.args }; };',
  configuration: [{ name: 'API_KEY', type: 'string' }],
  request_parameters: [{ name: 'card.number', type: 'string', optional: false }],
};
const target = { formulaId, tenantId, actorId, now };
const create: FormulaCommand = { type: 'CreateFormula', definition, ...target };
const created: FormulaEvent = {
  type: 'ReactorFormulaCreated',
  data: { formula_id: formulaId, tenant_id: tenantId, ...definition, created_by: actorId, created_at: now },
};
const changed = { ...definition, name: 'Charge v2', description: 'Second take' };
const caller = { permissions: ['reactor:update', 'token:create'], rules: [] };
const update: FormulaCommand = {
  type: 'UpdateFormula',
  definition: changed,
  reactorsRunningIt: [],
  caller,
  ...target,
  now: later,
};
const updated: FormulaEvent = {
  type: 'ReactorFormulaUpdated',
  data: { formula_id: formulaId, tenant_id: tenantId, ...changed, modified_by: actorId, modified_at: later },
};
const remove: FormulaCommand = { type: 'DeleteFormula', reactorsUsingIt: 0, ...target };
const deleted: FormulaEvent = {
  type: 'ReactorFormulaDeleted',
  data: { formula_id: formulaId, tenant_id: tenantId, deleted_by: actorId, deleted_at: now },
};
const spec = deciderSpec(formulaDecider);

describe('reactor formula decider', () => {
  it('creates once', () => {
    spec.given([]).when(create).then([created]);
    spec.given([created]).when(create).thenThrows(domainErrorWith('already-exists'));
  });

  it('refuses code that does not compile, at create and at update (unprocessable, naming body.code)', () => {
    const broken = { ...definition, code: 'module.exports = function ( {' };
    spec
      .given([])
      .when({ ...create, definition: broken })
      .thenThrows(domainErrorWith('unprocessable', { field: 'body.code' }));
    spec
      .given([created])
      .when({ ...update, definition: broken })
      .thenThrows(domainErrorWith('unprocessable', { field: 'body.code' }));
  });

  it('updates an active formula only, keeping its creation and setting modified_*', () => {
    spec.given([created]).when(update).then([updated]);
    spec.given([]).when(update).thenThrows(domainErrorWith('not-found'));
    spec.given([created, deleted]).when(update).thenThrows(domainErrorWith('not-found'));
    const state = fold(formulaDecider, [created, updated]);
    expect(state).toEqual({
      status: 'active',
      formula: {
        id: formulaId,
        tenant_id: tenantId,
        ...changed,
        created_by: actorId,
        created_at: now,
        modified_by: actorId,
        modified_at: later,
      },
    });
  });

  it('new code runs as each reactor’s application: the caller must hold what each holds (not allowed, naming the reactors)', () => {
    const runningAs = (id: string, permissions: string[]) => ({
      id,
      application: { id: `${id}-app`, type: 'private' as const, permissions, rules: [] },
    });
    const holding = runningAs('9d2f0a1e-0000-4000-8000-00000000000a', ['token:create']);
    const reading = runningAs('9d2f0a1e-0000-4000-8000-00000000000b', ['token:read']);
    spec
      .given([created])
      .when({ ...update, reactorsRunningIt: [holding] })
      .then([updated]);
    spec
      .given([created])
      .when({ ...update, reactorsRunningIt: [holding, reading] })
      .thenThrows(
        (error) =>
          domainErrorWith('not-allowed', { field: 'path.id' })(error) &&
          JSON.stringify((error as DomainError).fields).includes(reading.id) &&
          !JSON.stringify((error as DomainError).fields).includes(holding.id),
      );
  });

  it('deletes an active formula that no reactor uses; one in use is a conflict', () => {
    spec.given([created]).when(remove).then([deleted]);
    spec
      .given([created])
      .when({ ...remove, reactorsUsingIt: 2 })
      .thenThrows(domainErrorWith('conflict'));
    spec.given([created, deleted]).when(remove).thenThrows(domainErrorWith('not-found'));
  });
});
