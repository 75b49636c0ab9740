import type { AnyEvent } from '@tokenvault/eventstore';

/**
 * Consecutive events of one type, as their data: a switch on a run's `type` narrows its `data`
 * to that member's (one per member of the union E).
 */
export type Run<E extends AnyEvent> = E extends AnyEvent ? { type: E['type']; data: E['data'][] } : never;

/** Consecutive events of one type, so each run is written with one statement. */
export function runsOfSameType<E extends AnyEvent>(events: readonly E[]): Run<E>[] {
  const runs: { type: E['type']; data: E['data'][] }[] = [];
  for (const event of events) {
    const current = runs.at(-1);
    if (current && current.type === event.type) current.data.push(event.data);
    else runs.push({ type: event.type, data: [event.data] });
  }
  // Every event of a run has the run's type: its data is that member's.
  return runs as Run<E>[];
}
