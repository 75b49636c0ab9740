/** A domain event as deciders see it: no metadata, no position. */
export interface DomainEvent<Type extends string = string, Data extends object = object> {
  type: Type;
  data: Data;
}

/**
 * A pure decision function: given the state folded from past events, a command yields new
 * events or throws a DomainError (@tokenvault/platform: what is wrong in domain words; the HTTP
 * edge maps it to a problem). No I/O, so it is tested given/when/then.
 */
export interface Decider<State, Command, Event extends DomainEvent> {
  initialState(): State;
  evolve(state: State, event: Event): State;
  decide(command: Command, state: State): Event[];
}

export function fold<State, Event extends DomainEvent>(
  decider: Pick<Decider<State, unknown, Event>, 'initialState' | 'evolve'>,
  events: readonly Event[],
): State {
  return events.reduce((state, event) => decider.evolve(state, event), decider.initialState());
}
