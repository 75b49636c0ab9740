import { conflict, type Principal } from '@tokenvault/platform';
import {
  WrongExpectedRevisionError,
  type EventMetadata,
  type EventStore,
  type Position,
} from '@tokenvault/eventstore';
import { aggregateStream } from './aggregate-stream.ts';
import type { Decider, DomainEvent } from './decider.ts';

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
  /** The stream must not exist yet: the first read is skipped (one round trip less on creates). */
  newStream?: boolean;
  /** The detail of the 409 when other writers kept getting there first. */
  conflictDetail?: string;
  /** Load-decide-append rounds before a 409; default `defaultCommandAttempts`. */
  maxAttempts?: number;
}

/**
 * Enough that writers of one stream at the same moment all get through: each round one of them
 * appends, the others re-read and decide again (most often to do nothing).
 */
export const defaultCommandAttempts = 10;

/** Full jitter over a doubling window (5, 10, 20 … 100 ms), so the retrying writers spread out. */
const retryDelayMs = (attempt: number) => Math.random() * Math.min(100, 5 * 2 ** attempt);

/**
 * Load, decide, append with the revision that was read. When another writer appended in between,
 * the stream is read again and the command decided again against what it now holds (emmett's
 * handleCommand does the same), so an idempotent command never fails only because of a concurrent
 * writer; after `maxAttempts` rounds it is a 409.
 */
export async function executeCommand<State, Command, Event extends DomainEvent>(
  store: EventStore,
  stream: string,
  decider: Decider<State, Command, Event>,
  command: Command,
  metadata: EventMetadata,
  options: ExecuteOptions = {},
): Promise<CommandOutcome<State, Event>> {
  const maxAttempts = options.maxAttempts ?? defaultCommandAttempts;
  for (let attempt = 1; ; attempt++) {
    // A create's first round assumes no stream; a retry must see what the other writer wrote.
    const { state, events: history } =
      options.newStream && attempt === 1
        ? { state: decider.initialState(), events: [] }
        : await aggregateStream(store, stream, decider);
    const events = decider.decide(command, state);
    if (events.length === 0) return { state, events, position: null };
    const lastRevision = history.at(-1)?.revision;
    try {
      const appended = await store.append(
        stream,
        events.map((event) => ({ type: event.type, data: event.data, metadata })),
        { expectedRevision: lastRevision === undefined ? 'no_stream' : lastRevision },
      );
      return {
        state: events.reduce((folded, event) => decider.evolve(folded, event), state),
        events,
        position: appended.position,
      };
    } catch (error) {
      if (!(error instanceof WrongExpectedRevisionError)) throw error;
      if (attempt >= maxAttempts) {
        throw conflict(options.conflictDetail ?? 'The resource was changed concurrently; retry the request.');
      }
      await new Promise((resolve) => setTimeout(resolve, retryDelayMs(attempt)));
    }
  }
}
