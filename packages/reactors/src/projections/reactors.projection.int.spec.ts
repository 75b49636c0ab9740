import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { type PoolClient } from '@tokenvault/platform';
import type { DataOf } from '@tokenvault/cqrs';
import { projectionSpec, recordedEvent, useTestPool } from '@tokenvault/cqrs/testing';
import { reactorsMigrations } from '../migrations.ts';
import { streams, type FormulaDefinition, type ReactorsEvent } from '../domain/reactors.events.ts';
import { reactorsProjection } from './reactors.projection.ts';

const tenant: string = randomUUID();
const otherTenant: string = randomUUID();
const actor = randomUUID();
const created_at = '2026-01-10T10:00:00.000Z';
const modified_at = '2026-01-11T10:00:00.000Z';

const definition: FormulaDefinition = {
  name: 'Charge',
  description: 'Charges a card',
  type: 'private',
  code: 'module.exports = async (req) => ({ raw: req.args })',
  configuration: [{ name: 'API_KEY', type: 'string' }],
  request_parameters: [{ name: 'card', type: 'string', optional: false }],
};

const formulaCreated = (formulaId: string, tenantId = tenant, fields: Partial<FormulaDefinition> = {}) => {
  const data: DataOf<ReactorsEvent, 'ReactorFormulaCreated'> = {
    formula_id: formulaId,
    tenant_id: tenantId,
    ...definition,
    ...fields,
    created_by: actor,
    created_at,
  };
  return recordedEvent('ReactorFormulaCreated', data, { stream: streams.formula(tenantId, formulaId) });
};

const formulaUpdated = (formulaId: string, fields: Partial<FormulaDefinition> = {}) => {
  const { description: _description, ...withoutDescription } = definition;
  const data: DataOf<ReactorsEvent, 'ReactorFormulaUpdated'> = {
    formula_id: formulaId,
    tenant_id: tenant,
    ...withoutDescription,
    name: 'Charge v2',
    code: 'module.exports = async () => ({ raw: 2 })',
    configuration: [],
    request_parameters: [{ name: 'user.name', type: 'string', optional: true }],
    ...fields,
    modified_by: actor,
    modified_at,
  };
  return recordedEvent('ReactorFormulaUpdated', data, { stream: streams.formula(tenant, formulaId) });
};

const formulaDeleted = (formulaId: string) => {
  const data: DataOf<ReactorsEvent, 'ReactorFormulaDeleted'> = {
    formula_id: formulaId,
    tenant_id: tenant,
    deleted_by: actor,
    deleted_at: modified_at,
  };
  return recordedEvent('ReactorFormulaDeleted', data, { stream: streams.formula(tenant, formulaId) });
};

const reactorCreated = (
  reactorId: string,
  formulaId: string,
  tenantId = tenant,
  fields: Partial<DataOf<ReactorsEvent, 'ReactorCreated'>> = {},
) => {
  const data: DataOf<ReactorsEvent, 'ReactorCreated'> = {
    reactor_id: reactorId,
    tenant_id: tenantId,
    name: 'Stripe',
    formula_id: formulaId,
    configuration_ciphertext: `sealed-configuration-${reactorId}`,
    created_by: actor,
    created_at,
    ...fields,
  };
  return recordedEvent('ReactorCreated', data, { stream: streams.reactor(tenantId, reactorId) });
};

const reactorUpdated = (reactorId: string, fields: Partial<DataOf<ReactorsEvent, 'ReactorUpdated'>> = {}) => {
  const data: DataOf<ReactorsEvent, 'ReactorUpdated'> = {
    reactor_id: reactorId,
    tenant_id: tenant,
    name: 'Stripe (live)',
    configuration_ciphertext: `sealed-again-${reactorId}`,
    modified_by: actor,
    modified_at,
    ...fields,
  };
  return recordedEvent('ReactorUpdated', data, { stream: streams.reactor(tenant, reactorId) });
};

const reactorDeleted = (reactorId: string, formulaId: string) => {
  const data: DataOf<ReactorsEvent, 'ReactorDeleted'> = {
    reactor_id: reactorId,
    tenant_id: tenant,
    formula_id: formulaId,
    deleted_by: actor,
    deleted_at: modified_at,
  };
  return recordedEvent('ReactorDeleted', data, { stream: streams.reactor(tenant, reactorId) });
};

const tenantDeleted = (tenantId: string) =>
  recordedEvent('TenantDeleted', { tenant_id: tenantId, deleted_by: actor, deleted_at: modified_at });

const formulas = async (tx: PoolClient) =>
  (await tx.query<Record<string, unknown>>('SELECT * FROM reactor_formulas ORDER BY tenant_id, id')).rows;
const reactors = async (tx: PoolClient) =>
  (await tx.query<Record<string, unknown>>('SELECT * FROM reactors ORDER BY tenant_id, id')).rows;
const idsIn = async (tx: PoolClient, table: 'reactors' | 'reactor_formulas', tenantId = tenant) =>
  (
    await tx.query<{ id: string }>(`SELECT id FROM ${table} WHERE tenant_id = $1 ORDER BY id`, [tenantId])
  ).rows.map((row) => row.id);

describe('reactorsProjection', () => {
  const db = useTestPool(reactorsMigrations);
  const spec = () => projectionSpec(reactorsProjection, db.pool);

  describe('formulas', () => {
    it('ReactorFormulaCreated inserts the formula as declared, once', async () => {
      const formula = randomUUID();
      const events = [formulaCreated(formula)];
      await spec()
        .given(events)
        .when(events)
        .then(async (tx) => {
          expect(await formulas(tx)).toEqual([
            {
              tenant_id: tenant,
              id: formula,
              name: 'Charge',
              description: 'Charges a card',
              type: 'private',
              code: definition.code,
              configuration: [{ name: 'API_KEY', type: 'string' }],
              request_parameters: [{ name: 'card', type: 'string', optional: false }],
              created_by: actor,
              created_at: new Date(created_at),
              modified_by: null,
              modified_at: null,
            },
          ]);
        });
    });

    it('ReactorFormulaUpdated replaces the definition; a description absent from the event is removed', async () => {
      const formula = randomUUID();
      await spec()
        .given([formulaCreated(formula)])
        .when([formulaUpdated(formula)])
        .then(async (tx) => {
          expect(await formulas(tx)).toEqual([
            expect.objectContaining({
              id: formula,
              name: 'Charge v2',
              description: null,
              code: 'module.exports = async () => ({ raw: 2 })',
              configuration: [],
              request_parameters: [{ name: 'user.name', type: 'string', optional: true }],
              created_at: new Date(created_at),
              modified_by: actor,
              modified_at: new Date(modified_at),
            }),
          ]);
        });
    });

    it('ReactorFormulaDeleted removes that formula only', async () => {
      const [deleted, kept, elsewhere] = [randomUUID(), randomUUID(), randomUUID()];
      await spec()
        .given([formulaCreated(deleted), formulaCreated(kept), formulaCreated(elsewhere, otherTenant)])
        .when([formulaDeleted(deleted)])
        .then(async (tx) => {
          expect(await idsIn(tx, 'reactor_formulas')).toEqual([kept]);
          expect(await idsIn(tx, 'reactor_formulas', otherTenant)).toEqual([elsewhere]);
        });
    });
  });

  describe('reactors', () => {
    it('ReactorCreated inserts the reactor with its sealed configuration, once', async () => {
      const [formula, reactor, application] = [randomUUID(), randomUUID(), randomUUID()];
      const events = [reactorCreated(reactor, formula, tenant, { application_id: application })];
      await spec()
        .given([formulaCreated(formula), ...events])
        .when(events)
        .then(async (tx) => {
          expect(await reactors(tx)).toEqual([
            {
              tenant_id: tenant,
              id: reactor,
              name: 'Stripe',
              formula_id: formula,
              configuration_ciphertext: `sealed-configuration-${reactor}`,
              application_id: application,
              created_by: actor,
              created_at: new Date(created_at),
              modified_by: null,
              modified_at: null,
            },
          ]);
        });
    });

    it('ReactorUpdated sets name, configuration and application (absent: none)', async () => {
      const [formula, withApplication, withoutApplication] = [randomUUID(), randomUUID(), randomUUID()];
      const application = randomUUID();
      await spec()
        .given([
          reactorCreated(withApplication, formula, tenant, { application_id: randomUUID() }),
          reactorCreated(withoutApplication, formula),
        ])
        .when([
          reactorUpdated(withApplication),
          reactorUpdated(withoutApplication, { application_id: application }),
        ])
        .then(async (tx) => {
          const byId = new Map((await reactors(tx)).map((row) => [row.id, row]));
          expect(byId.get(withApplication)).toMatchObject({
            name: 'Stripe (live)',
            formula_id: formula,
            configuration_ciphertext: `sealed-again-${withApplication}`,
            application_id: null,
            modified_by: actor,
            modified_at: new Date(modified_at),
          });
          expect(byId.get(withoutApplication)).toMatchObject({ application_id: application });
        });
    });

    it('ReactorDeleted removes that reactor only, and leaves its formula', async () => {
      const [formula, deleted, kept] = [randomUUID(), randomUUID(), randomUUID()];
      await spec()
        .given([formulaCreated(formula), reactorCreated(deleted, formula), reactorCreated(kept, formula)])
        .when([reactorDeleted(deleted, formula)])
        .then(async (tx) => {
          expect(await idsIn(tx, 'reactors')).toEqual([kept]);
          expect(await idsIn(tx, 'reactor_formulas')).toEqual([formula]);
        });
    });
  });

  describe('TenantDeleted', () => {
    it('removes the tenant’s formulas and reactors, and no other tenant’s', async () => {
      const [formula, reactor, theirFormula, theirReactor] = [
        randomUUID(),
        randomUUID(),
        randomUUID(),
        randomUUID(),
      ];
      await spec()
        .given([
          formulaCreated(formula),
          reactorCreated(reactor, formula),
          formulaCreated(theirFormula, otherTenant),
          reactorCreated(theirReactor, theirFormula, otherTenant),
        ])
        .when([tenantDeleted(tenant)])
        .then(async (tx) => {
          expect(await idsIn(tx, 'reactor_formulas')).toEqual([]);
          expect(await idsIn(tx, 'reactors')).toEqual([]);
          expect(await idsIn(tx, 'reactor_formulas', otherTenant)).toEqual([theirFormula]);
          expect(await idsIn(tx, 'reactors', otherTenant)).toEqual([theirReactor]);
        });
    });
  });
});
