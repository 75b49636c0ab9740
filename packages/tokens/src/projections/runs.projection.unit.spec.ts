import { describe, expect, it } from 'vitest';
import type { DomainEvent } from '@tokenvault/cqrs';
import { runsOfSameType } from './runs.projection.ts';

type Event = DomainEvent<'Counted', { n: number }> | DomainEvent<'Named', { name: string }>;

const counted = (n: number): Event => ({ type: 'Counted', data: { n } });
const named = (name: string): Event => ({ type: 'Named', data: { name } });

describe('runsOfSameType', () => {
  it('groups consecutive events of one type, in order, as their data', () => {
    expect(runsOfSameType([counted(1), counted(2), named('a'), counted(3)])).toEqual([
      { type: 'Counted', data: [{ n: 1 }, { n: 2 }] },
      { type: 'Named', data: [{ name: 'a' }] },
      { type: 'Counted', data: [{ n: 3 }] },
    ]);
  });

  it('has no run for no events', () => {
    expect(runsOfSameType([])).toEqual([]);
  });

  it('narrows a run’s data by its type', () => {
    const totals = runsOfSameType([counted(1), counted(2), named('ab')]).map((run) => {
      switch (run.type) {
        case 'Counted':
          return run.data.reduce((sum, data) => sum + data.n, 0);
        case 'Named':
          return run.data.map((data) => data.name.length).join();
      }
    });
    expect(totals).toEqual([3, '2']);
  });
});
