import { describe, expect, it } from 'vitest';
import type { ReactorResponse } from '@tokenvault/contracts';
import type { InvalidationListener } from '@tokenvault/cqrs';
import { principalsOfTenant } from '@tokenvault/tenancy';
import { reactorInvalidationsOf, reactorsOfTenant } from '../projections/reactors.projection.ts';
import { ReactorDefinitions } from './reactor-definitions.queries.ts';

/** The read model as a map, counting look-ups; a look-up can be held to race an eviction with it. */
function readModel() {
  const rows = new Map<string, ReactorResponse>();
  const lookUps: string[] = [];
  let held: Promise<void> | undefined;
  return {
    rows,
    lookUps,
    hold(until: Promise<void>) {
      held = until;
    },
    async get(tenantId: string, id: string) {
      lookUps.push(`${tenantId}/${id}`);
      const row = rows.get(`${tenantId}/${id}`);
      if (held) await held;
      return row;
    },
  };
}

function invalidations() {
  const listeners: InvalidationListener[] = [];
  return {
    onInvalidation: (listener: InvalidationListener) => listeners.push(listener),
    announce: (key: string | null) => listeners.forEach((listener) => listener(key)),
  };
}

const reactor = (name: string) => ({ name }) as ReactorResponse;

describe('the reactor definitions an invocation runs', () => {
  it('reads a reactor once, and again only after its tenant’s reactors or applications change', async () => {
    const model = readModel();
    const announced = invalidations();
    const definitions = new ReactorDefinitions(model, announced, { ttlMs: 60_000 });
    model.rows.set('t/r', reactor('v1'));
    model.rows.set('u/r', reactor('theirs'));
    expect(await definitions.get('t', 'r')).toEqual(reactor('v1'));
    expect(await definitions.get('u', 'r')).toEqual(reactor('theirs'));
    model.rows.set('t/r', reactor('v2'));
    expect(await definitions.get('t', 'r')).toEqual(reactor('v1'));
    expect(model.lookUps).toEqual(['t/r', 'u/r']);

    announced.announce(reactorsOfTenant('t'));
    expect(await definitions.get('t', 'r')).toEqual(reactor('v2'));
    model.rows.set('t/r', reactor('v3'));
    announced.announce(principalsOfTenant('t'));
    expect(await definitions.get('t', 'r')).toEqual(reactor('v3'));
    // Another tenant's entries stay; keys of other caches evict nothing.
    announced.announce('tenant-keys:u');
    expect(await definitions.get('u', 'r')).toEqual(reactor('theirs'));
    expect(model.lookUps).toEqual(['t/r', 'u/r', 't/r', 't/r']);

    announced.announce(null);
    await definitions.get('u', 'r');
    expect(model.lookUps).toHaveLength(5);
  });

  it('never caches a reactor that is not there, nor one read across an eviction', async () => {
    const model = readModel();
    const announced = invalidations();
    const definitions = new ReactorDefinitions(model, announced, { ttlMs: 60_000 });
    expect(await definitions.get('t', 'r')).toBeUndefined();
    model.rows.set('t/r', reactor('created'));
    expect(await definitions.get('t', 'r')).toEqual(reactor('created'));

    announced.announce(reactorsOfTenant('t'));
    let release = () => {};
    model.hold(new Promise((resolve) => (release = resolve)));
    const racing = definitions.get('t', 'r');
    // Committed while the read was on its way: what it read may predate the change.
    announced.announce(reactorsOfTenant('t'));
    release();
    expect(await racing).toEqual(reactor('created'));
    model.hold(Promise.resolve());
    await definitions.get('t', 'r');
    expect(model.lookUps).toEqual(['t/r', 't/r', 't/r', 't/r']);
  });

  it('reads every time with a TTL of 0', async () => {
    const model = readModel();
    const definitions = new ReactorDefinitions(model, invalidations(), { ttlMs: 0 });
    model.rows.set('t/r', reactor('v1'));
    await definitions.get('t', 'r');
    await definitions.get('t', 'r');
    expect(model.lookUps).toHaveLength(2);
  });
});

describe('the reactor projection’s invalidations', () => {
  const event = (type: string) => ({ type, data: { tenant_id: 't' } });

  it('names the tenant’s reactors for every change to a reactor or formula that runs, and nothing else', () => {
    for (const type of [
      'ReactorFormulaUpdated',
      'ReactorFormulaDeleted',
      'ReactorUpdated',
      'ReactorDeleted',
      'TenantDeleted',
    ]) {
      expect(reactorInvalidationsOf(event(type)), type).toEqual([reactorsOfTenant('t')]);
    }
    for (const type of ['ReactorFormulaCreated', 'ReactorCreated', 'TokenCreated']) {
      expect(reactorInvalidationsOf(event(type)), type).toEqual([]);
    }
  });
});
