import { describe, expect, it } from 'vitest';
import { InMemoryEventStore } from '@tokenvault/eventstore/testing';
import type { AppendSideData } from '@tokenvault/eventstore';
import { commandContext, commandHandler } from './command.ts';
import type { Decider, DomainEvent } from './decider.ts';
import { fixedClock, testPrincipal } from './testing.ts';

type Counted = DomainEvent<'Counted', { counter: string; by: string; at: string }>;
interface Count {
  tenantId: string;
  counter: string;
  actorId: string;
  now: string;
}

/** Appends one event per command, unless the counter already holds one by the same actor. */
const onceEach: Decider<string[], Count, Counted> = {
  initialState: () => [],
  evolve: (actors, event) => [...actors, event.data.by],
  decide: (command, actors) =>
    actors.includes(command.actorId)
      ? []
      : [{ type: 'Counted', data: { counter: command.counter, by: command.actorId, at: command.now } }],
};

const tenantId = '1d0c4b7e-0000-4000-8000-000000000001';
const principal = testPrincipal(tenantId, 'actor-1', [], { actorType: 'user' });
const clock = fixedClock('2026-03-01T00:00:00.000Z');

describe('commandHandler', () => {
  it('sends each command to the stream it names, with the caller’s actor, time and metadata', async () => {
    const store = new InMemoryEventStore();
    const handle = commandHandler(
      store,
      onceEach,
      (command) => `counter-${command.tenantId}-${command.counter}`,
    );
    const { acting, metadata } = commandContext(principal, 'request-1', clock);
    expect(acting).toEqual({ tenantId, actorId: 'actor-1', now: '2026-03-01T00:00:00.000Z' });
    const outcome = await handle({ counter: 'a', ...acting }, metadata);
    expect(outcome.state).toEqual(['actor-1']);
    expect(await store.readStream(`counter-${tenantId}-a`)).toMatchObject([
      {
        type: 'Counted',
        data: { counter: 'a', by: 'actor-1', at: '2026-03-01T00:00:00.000Z' },
        metadata: {
          tenant_id: tenantId,
          actor_id: 'actor-1',
          actor_type: 'user',
          correlation_id: 'request-1',
        },
      },
    ]);
    expect(await store.readStream(`counter-${tenantId}-b`)).toEqual([]);
  });

  it('hands the side data to the append, and never stores it', async () => {
    const seen: (AppendSideData | undefined)[] = [];
    const store = new InMemoryEventStore({
      onAppend: (_events, context) => void seen.push(context.sideData),
    });
    const handle = commandHandler(store, onceEach, (command) => `counter-${command.counter}`);
    const { acting, metadata } = commandContext(principal, 'request-1', clock);
    await handle({ counter: 'a', ...acting }, metadata, { sideData: { note: 'for the append only' } });
    await handle({ counter: 'b', ...acting }, metadata);
    expect(seen).toEqual([{ note: 'for the append only' }, undefined]);
    expect(JSON.stringify(await store.readStream('counter-a'))).not.toContain('for the append only');
  });

  it('appends nothing when the decision is to do nothing', async () => {
    const store = new InMemoryEventStore();
    const handle = commandHandler(store, onceEach, (command) => `counter-${command.counter}`);
    const { acting, metadata } = commandContext(principal, 'request-1', clock);
    await handle({ counter: 'a', ...acting }, metadata);
    expect(await handle({ counter: 'a', ...acting }, metadata)).toMatchObject({ events: [], position: null });
    expect(await store.readStream('counter-a')).toHaveLength(1);
  });
});
