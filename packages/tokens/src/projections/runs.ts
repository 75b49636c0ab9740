import type { RecordedEvent } from '@tokenvault/eventstore';
import type { TokensContextEvent } from '../domain/events.ts';

type TenantDeleted = { type: 'TenantDeleted'; data: { tenant_id: string } };
export type Handled = RecordedEvent & (TokensContextEvent | TenantDeleted);
export type DataOf<Type extends Handled['type']> = Extract<
  TokensContextEvent | TenantDeleted,
  { type: Type }
>['data'];

/** Consecutive events of one type, so each run is written with one statement. */
export function runsOfSameType(events: readonly Handled[]): Handled[][] {
  const runs: Handled[][] = [];
  for (const event of events) {
    const current = runs.at(-1);
    if (current && current[0]!.type === event.type) current.push(event);
    else runs.push([event]);
  }
  return runs;
}
