import { conflict, type Principal } from '@tokenvault/platform';
import {
  WrongExpectedRevisionError,
  type EventMetadata,
  type EventStore,
  type Position,
} from '@tokenvault/eventstore';
import { fold, type Decider, type DomainEvent } from './decider.ts';

/** Who caused the events: the caller's tenant and identity, and the request that carried it. */
export function metadataOf(principal: Principal, correlationId: string): EventMetadata {
  return {
    tenant_id: principal.tenantId,
    actor_id: principal.actorId,
    actor_type: principal.actorType,
    correlation_id: correlationId,
  };
}

export interface CommandOutcome<State, Event> {
  state: State;
  events: Event[];
  /** Where the last appended event stands; null when the decision was to do nothing. */
  position: Position | null;
}

export interface ExecuteOptions {
  /** The stream must not exist yet: its read is skipped (one round trip less on creates). */
  newStream?: boolean;
  /** The detail of the 409 when another writer got there first. */
  conflictDetail?: string;
}

/** Load, decide, append with the revision that was read: a concurrent writer gets a 409. */
export async function executeCommand<State, Command, Event extends DomainEvent>(
  store: EventStore,
  stream: string,
  decider: Decider<State, Command, Event>,
  command: Command,
  metadata: EventMetadata,
  options: ExecuteOptions = {},
): Promise<CommandOutcome<State, Event>> {
  const history = options.newStream ? [] : await store.readStream(stream);
  const state = fold(
    decider,
    history.map((event) => ({ type: event.type, data: event.data }) as Event),
  );
  const events = decider.decide(command, state);
  if (events.length === 0) return { state, events, position: null };
  const lastRevision = history.at(-1)?.revision;
  try {
    const appended = await store.append(
      stream,
      events.map((event) => ({ type: event.type, data: event.data, metadata })),
      { expectedRevision: lastRevision === undefined ? 'no_stream' : lastRevision },
    );
    return { state: events.reduce(decider.evolve, state), events, position: appended.position };
  } catch (error) {
    if (error instanceof WrongExpectedRevisionError) {
      throw conflict(options.conflictDetail ?? 'The resource was changed concurrently; retry the request.');
    }
    throw error;
  }
}
