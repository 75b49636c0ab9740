import { describe, expect, it } from 'vitest';
import { fixedClock, poolAnsweringNoRows, storedEvents, testPrincipal } from '@tokenvault/cqrs/testing';
import type { EventMetadata, Position } from '@tokenvault/eventstore';
import { InMemoryEventStore } from '@tokenvault/eventstore/testing';
import { problemWith } from '@tokenvault/platform/testing';
import { reactorFormulaBody } from '@tokenvault/contracts';
import { streams, type ReactorsEvent } from '../domain/reactors.events.ts';
import { FormulaCommands } from './formulas.commands.ts';
import { ReactorCommands } from './reactors.commands.ts';

const tenantId = '5b2d0c3a-0000-4000-8000-000000000001';
const actorId = '5b2d0c3a-0000-4000-8000-000000000002';
const formulaId = '5b2d0c3a-0000-4000-8000-000000000003';
const reactorId = '5b2d0c3a-0000-4000-8000-000000000004';
const now = '2026-03-01T00:00:00.000Z';
const earlier = '2026-02-01T00:00:00.000Z';
const correlationId = 'request-1';
const principal = testPrincipal(tenantId, actorId, ['reactor:create', 'reactor:update', 'reactor:delete']);
const metadata: EventMetadata = {
  tenant_id: tenantId,
  actor_id: actorId,
  actor_type: 'application',
  correlation_id: correlationId,
};

/** The advisory lock's sessions: granted at once (one test at a time holds it). */
const lockPool = poolAnsweringNoRows();

const definition = {
  name: 'Charge',
  type: 'private' as const,
  code: 'module.exports = async (req) => ({ raw: req.args });',
  configuration: [{ name: 'api_key', type: 'string' as const }],
  request_parameters: [],
};
const formulaCreated: ReactorsEvent = {
  type: 'ReactorFormulaCreated',
  data: {
    formula_id: formulaId,
    tenant_id: tenantId,
    ...definition,
    created_by: actorId,
    created_at: earlier,
  },
};
const reactorCreated: ReactorsEvent = {
  type: 'ReactorCreated',
  data: {
    reactor_id: reactorId,
    tenant_id: tenantId,
    name: 'Charge it',
    formula_id: formulaId,
    configuration_ciphertext: 'sealed:before',
    created_by: actorId,
    created_at: earlier,
  },
};

/** Both handlers on one in-memory store holding `history` (each event in its own stream). */
async function given(history: ReactorsEvent[] = [], reactorsUsingFormula = 0) {
  const store = new InMemoryEventStore();
  for (const event of history) {
    const stream =
      'reactor_id' in event.data
        ? streams.reactor(tenantId, event.data.reactor_id)
        : streams.formula(tenantId, event.data.formula_id);
    await store.given(stream, [{ ...event, metadata }]);
  }
  const readable: Position[] = [];
  const applications = { getMany: async () => [] };
  const clock = fixedClock(now);
  const formulas = new FormulaCommands({
    store,
    lockPool,
    reactors: {
      reactorsWithApplicationUsingFormula: async () => [],
      countUsingFormula: async () => reactorsUsingFormula,
    },
    applications,
    clock,
  });
  const reactors = new ReactorCommands({
    store,
    ownerPool: lockPool,
    lockPool,
    consistency: { writeReadable: async (position) => readable.push(position) > 0 },
    applications,
    vault: { encrypt: async (_tenant, subject, value) => `sealed:${subject}:${JSON.stringify(value)}` },
    clock,
  });
  return { store, formulas, reactors, readable };
}

describe('FormulaCommands against an in-memory event store', () => {
  it('create: appends ReactorFormulaCreated with the definition, as the caller, at the clock’s time', async () => {
    const { store, formulas } = await given();
    const { formula } = await formulas.create(principal, reactorFormulaBody.parse(definition), correlationId);
    expect(await storedEvents(store, streams.formula(tenantId, formula.id))).toEqual([
      {
        type: 'ReactorFormulaCreated',
        data: {
          formula_id: formula.id,
          tenant_id: tenantId,
          ...definition,
          created_by: actorId,
          created_at: now,
        },
        metadata,
      },
    ]);
  });

  it('create: code that does not compile is a 422, and nothing is appended', async () => {
    const { store, formulas } = await given();
    const body = reactorFormulaBody.parse({ ...definition, code: 'module.exports = (' });
    await expect(formulas.create(principal, body, correlationId)).rejects.toSatisfy(
      problemWith(422, 'body.code'),
    );
    expect(await store.headPosition()).toBeUndefined();
  });

  it('delete: a formula that reactors run is a 409 and stays', async () => {
    const { store, formulas } = await given([formulaCreated], 2);
    await expect(formulas.delete(principal, formulaId, correlationId)).rejects.toSatisfy(problemWith(409));
    expect(await storedEvents(store, streams.formula(tenantId, formulaId))).toHaveLength(1);
  });

  it('delete: appends ReactorFormulaDeleted', async () => {
    const { store, formulas } = await given([formulaCreated]);
    await formulas.delete(principal, formulaId, correlationId);
    expect((await storedEvents(store, streams.formula(tenantId, formulaId))).at(-1)).toEqual({
      type: 'ReactorFormulaDeleted',
      data: { formula_id: formulaId, tenant_id: tenantId, deleted_by: actorId, deleted_at: now },
      metadata,
    });
  });
});

describe('ReactorCommands against an in-memory event store', () => {
  it('create: appends ReactorCreated with the configuration sealed, and waits until it is readable', async () => {
    const { store, reactors, readable } = await given([formulaCreated]);
    const body = { name: 'Charge it', configuration: { api_key: 'sk' }, formula: { id: formulaId } };
    const { reactor, position } = await reactors.create(principal, body, correlationId);
    expect(reactor).toMatchObject({ name: 'Charge it', configuration: { api_key: 'sk' } });
    expect(readable).toEqual([position]);
    expect(await storedEvents(store, streams.reactor(tenantId, reactor.id))).toEqual([
      {
        type: 'ReactorCreated',
        data: {
          reactor_id: reactor.id,
          tenant_id: tenantId,
          name: 'Charge it',
          formula_id: formulaId,
          configuration_ciphertext: `sealed:reactor/${reactor.id}/configuration:{"api_key":"sk"}`,
          created_by: actorId,
          created_at: now,
        },
        metadata,
      },
    ]);
  });

  it('create: a formula that does not exist is a 404, and nothing is appended', async () => {
    const { store, reactors } = await given();
    const body = { name: 'Charge it', configuration: { api_key: 'sk' }, formula: { id: formulaId } };
    await expect(reactors.create(principal, body, correlationId)).rejects.toSatisfy(problemWith(404));
    expect(await store.headPosition()).toBeUndefined();
  });

  it('create: a configuration the formula does not declare is a 400', async () => {
    const { reactors } = await given([formulaCreated]);
    const body = { name: 'Charge it', configuration: { other: 'x' }, formula: { id: formulaId } };
    await expect(reactors.create(principal, body, correlationId)).rejects.toSatisfy(problemWith(400));
  });

  it('delete: appends ReactorDeleted naming its formula', async () => {
    const { store, reactors } = await given([formulaCreated, reactorCreated]);
    await reactors.delete(principal, reactorId, correlationId);
    expect((await storedEvents(store, streams.reactor(tenantId, reactorId))).at(-1)).toEqual({
      type: 'ReactorDeleted',
      data: {
        reactor_id: reactorId,
        tenant_id: tenantId,
        formula_id: formulaId,
        deleted_by: actorId,
        deleted_at: now,
      },
      metadata,
    });
  });
});
