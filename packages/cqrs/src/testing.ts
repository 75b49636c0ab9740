import { expect } from 'vitest';
import { fold, type Decider, type DomainEvent } from './decider.ts';

/**
 * Given/when/then for deciders, in the manner of emmett's DeciderSpecification:
 * `spec(decider).given([...events]).when(command).then([...events])` or `.thenThrows(check)`.
 */
export function deciderSpec<State, Command, Event extends DomainEvent>(
  decider: Decider<State, Command, Event>,
) {
  return {
    given(history: Event[]) {
      return {
        when(command: Command) {
          const run = () => decider.decide(command, fold(decider, history));
          return {
            then(expected: Event[]) {
              expect(run()).toEqual(expected);
            },
            thenThrows(check: (error: unknown) => boolean) {
              let thrown: unknown;
              try {
                run();
              } catch (error) {
                thrown = error;
              }
              expect(thrown, 'the decider was expected to throw').toBeDefined();
              expect(check(thrown)).toBe(true);
            },
          };
        },
      };
    },
  };
}
