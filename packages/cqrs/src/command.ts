import { conflict, type Clock, type Principal } from '@tokenvault/platform';
import {
  WrongExpectedRevisionError,
  type AppendSideData,
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

/** Who acts, and when: the fields every command of a caller carries. */
export interface Acting {
  tenantId: string;
  actorId: string;
  /** The clock's time (ISO 8601): what the decider takes as now. */
  now: string;
}

/** A caller's command context: what its commands carry (`acting`) and what its events record (`metadata`). */
export interface CommandContext {
  acting: Acting;
  metadata: EventMetadata;
}

/**
 * The one way a command handler turns the caller into command fields and event metadata: the
 * principal's tenant and actor, the clock's time, the request's correlation id.
 */
export function commandContext(principal: Principal, correlationId: string, clock: Clock): CommandContext {
  return {
    acting: { tenantId: principal.tenantId, actorId: principal.actorId, now: clock.now().toISOString() },
    metadata: metadataOf(principal, correlationId),
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
  /** Handed to the append's write-side steps, never stored (see AppendSideData). */
  sideData?: AppendSideData;
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
        {
          expectedRevision: lastRevision === undefined ? 'no_stream' : lastRevision,
          ...(options.sideData ? { sideData: options.sideData } : {}),
        },
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

/** A decider's command handler with its store bound: handle(command, metadata, options). */
export type CommandHandler<State, Command, Event extends DomainEvent> = (
  command: Command,
  metadata: EventMetadata,
  options?: ExecuteOptions,
) => Promise<CommandOutcome<State, Event>>;

/**
 * Binds an aggregate's decider to the event store once (emmett's handleCommandWithDecider): each
 * command names its aggregate, `streamOf` the stream it lives in, and executeCommand runs it (load,
 * decide, one append; again on a concurrent writer).
 */
export function commandHandler<State, Command, Event extends DomainEvent>(
  store: EventStore,
  decider: Decider<State, Command, Event>,
  streamOf: (command: Command) => string,
): CommandHandler<State, Command, Event> {
  return (command, metadata, options) =>
    executeCommand(store, streamOf(command), decider, command, metadata, options);
}
