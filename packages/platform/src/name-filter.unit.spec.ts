import { describe, expect, it } from 'vitest';
import { namePattern } from './name-filter.ts';

describe('name filter', () => {
  it('without *: a substring; with *: anchored, * matching any run', () => {
    expect(namePattern('pay')).toBe('%pay%');
    expect(namePattern('pay*')).toBe('pay%');
    expect(namePattern('*pay*ent')).toBe('%pay%ent');
  });

  it('% _ and \\ match themselves', () => {
    expect(namePattern('100%_a\\b')).toBe('%100\\%\\_a\\\\b%');
  });
});
