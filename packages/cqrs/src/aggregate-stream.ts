import type { EventStore, RecordedEvent } from '@tokenvault/eventstore';
import { fold, type Decider, type DomainEvent } from './decider.ts';

/** A stream as its decider sees it: the recorded events, in order, and the state they fold into. */
export interface AggregatedStream<State> {
  state: State;
  events: RecordedEvent[];
}

/** Reads a stream and folds it with its decider (an absent stream is the initial state). */
export async function aggregateStream<State, Event extends DomainEvent>(
  store: Pick<EventStore, 'readStream'>,
  stream: string,
  decider: Pick<Decider<State, unknown, Event>, 'initialState' | 'evolve'>,
): Promise<AggregatedStream<State>> {
  const events = await store.readStream(stream);
  const domainEvents = events.map((event) => ({ type: event.type, data: event.data }) as Event);
  return { state: fold(decider, domainEvents), events };
}
