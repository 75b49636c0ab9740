import { describe, expect, it } from 'vitest';
import { fixedClock, poolAnsweringNoRows, storedEvents, testPrincipal } from '@tokenvault/cqrs/testing';
import type { EventMetadata, Position } from '@tokenvault/eventstore';
import { InMemoryEventStore } from '@tokenvault/eventstore/testing';
import { problemWith } from '@tokenvault/platform/testing';
import { reactorFormulaBody, type ApplicationResponse } from '@tokenvault/contracts';
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

const applicationId = '5b2d0c3a-0000-4000-8000-000000000005';
/** A private application of the tenant that reads every token: more than `principal` holds. */
const reader: ApplicationResponse = {
  id: applicationId,
  tenant_id: tenantId,
  name: 'Reader',
  type: 'private',
  permissions: ['token:read'],
  rules: [],
};
/** What the fake vault seals: readable, so that a spec can see what was sealed and open it again. */
const sealedPrefix = (subject: string) => `sealed:${subject}:`;
const vault = {
  encrypt: async (_tenant: string, subject: string, value: unknown) =>
    `${sealedPrefix(subject)}${JSON.stringify(value)}`,
  decrypt: async (_tenant: string, subject: string, sealed: string): Promise<unknown> =>
    JSON.parse(sealed.slice(sealedPrefix(subject).length)),
};
const sealedConfiguration = (configuration: object) =>
  `${sealedPrefix(`reactor/${reactorId}/configuration`)}${JSON.stringify(configuration)}`;

/** Both handlers on one in-memory store holding `history` (each event in its own stream). */
async function given(
  history: ReactorsEvent[] = [],
  reactorsUsingFormula = 0,
  tenantApplications: ApplicationResponse[] = [],
) {
  const store = new InMemoryEventStore();
  for (const event of history) {
    const stream =
      'reactor_id' in event.data
        ? streams.reactor(tenantId, event.data.reactor_id)
        : streams.formula(tenantId, event.data.formula_id);
    await store.given(stream, [{ ...event, metadata }]);
  }
  const readable: Position[] = [];
  const applications = {
    getMany: async (_tenant: string, ids: readonly string[]) =>
      tenantApplications.filter((application) => ids.includes(application.id)),
  };
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
    lockPool,
    consistency: { writeReadable: async (position) => readable.push(position) > 0 },
    applications,
    vault,
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

  describe('patch', () => {
    /** The reactor, bound to `reader`, with its configuration sealed as the fake vault seals it. */
    const bound: ReactorsEvent = {
      type: 'ReactorCreated',
      data: {
        ...reactorCreated.data,
        configuration_ciphertext: sealedConfiguration({ api_key: 'sk' }),
        application_id: applicationId,
      },
    };
    const readerKey = testPrincipal(tenantId, actorId, ['reactor:update', 'token:read']);

    it('changes the name alone: the configuration (sealed as it was) and the application stay', async () => {
      const { store, reactors } = await given([formulaCreated, bound], 0, [reader]);
      const { reactor } = await reactors.patch(readerKey, reactorId, { name: 'Renamed' }, correlationId);
      expect(reactor).toMatchObject({
        name: 'Renamed',
        configuration: { api_key: 'sk' },
        application: { id: applicationId, name: 'Reader', type: 'private' },
      });
      expect((await storedEvents(store, streams.reactor(tenantId, reactorId))).at(-1)).toEqual({
        type: 'ReactorUpdated',
        data: {
          reactor_id: reactorId,
          tenant_id: tenantId,
          name: 'Renamed',
          configuration_ciphertext: sealedConfiguration({ api_key: 'sk' }),
          application_id: applicationId,
          modified_by: actorId,
          modified_at: now,
        },
        metadata,
      });
    });

    it('re-decides the whole reactor: a key not holding what its application holds cannot even rename it (403)', async () => {
      const { store, reactors } = await given([formulaCreated, bound], 0, [reader]);
      await expect(
        reactors.patch(principal, reactorId, { name: 'Renamed' }, correlationId),
      ).rejects.toSatisfy(problemWith(403, 'body.application.id'));
      expect(await storedEvents(store, streams.reactor(tenantId, reactorId))).toHaveLength(1);
    });

    it('application: null unbinds it; a new configuration replaces the whole one and is checked against the formula', async () => {
      const { store, reactors } = await given([formulaCreated, bound], 0, [reader]);
      await expect(
        reactors.patch(readerKey, reactorId, { configuration: { other: 'x' } }, correlationId),
      ).rejects.toSatisfy(problemWith(400));
      // Unbinding is a change of what runs as the reader: a key holding less may not (issue 48, finding 8).
      await expect(
        reactors.patch(principal, reactorId, { application: null }, correlationId),
      ).rejects.toSatisfy(problemWith(403, 'path.id'));
      expect(await storedEvents(store, streams.reactor(tenantId, reactorId))).toHaveLength(1);
      const { reactor } = await reactors.patch(
        readerKey,
        reactorId,
        { application: null, configuration: { api_key: 'sk2' } },
        correlationId,
      );
      expect(reactor.application).toBeUndefined();
      expect(reactor.configuration).toEqual({ api_key: 'sk2' });
      expect((await storedEvents(store, streams.reactor(tenantId, reactorId))).at(-1)!.data).toEqual({
        reactor_id: reactorId,
        tenant_id: tenantId,
        name: 'Charge it',
        configuration_ciphertext: sealedConfiguration({ api_key: 'sk2' }),
        modified_by: actorId,
        modified_at: now,
      });
    });

    it('a reactor that does not exist is a 404, and nothing is appended', async () => {
      const { store, reactors } = await given([formulaCreated]);
      await expect(reactors.patch(principal, reactorId, { name: 'x' }, correlationId)).rejects.toSatisfy(
        problemWith(404),
      );
      expect(await storedEvents(store, streams.reactor(tenantId, reactorId))).toEqual([]);
    });
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
