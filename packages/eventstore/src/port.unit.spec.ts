import { describe, expect, it } from 'vitest';
import { comparePositions, WrongExpectedRevisionError } from './port.ts';

describe('comparePositions', () => {
  it('orders by commit, then prepare, beyond 2^53', () => {
    const big = '9007199254740993'; // 2^53 + 1: not representable as a number
    expect(
      comparePositions({ commit: big, prepare: '1' }, { commit: '9007199254740992', prepare: '9' }),
    ).toBe(1);
    expect(
      comparePositions({ commit: '5', prepare: big }, { commit: '5', prepare: '9007199254740992' }),
    ).toBe(1);
    expect(comparePositions({ commit: '5', prepare: '2' }, { commit: '5', prepare: '10' })).toBe(-1);
    expect(comparePositions({ commit: '10', prepare: '1' }, { commit: '9', prepare: '100' })).toBe(1);
    expect(comparePositions({ commit: '7', prepare: '7' }, { commit: '7', prepare: '7' })).toBe(0);
  });
});

describe('WrongExpectedRevisionError', () => {
  it('names the stream and the expectation', () => {
    const error = new WrongExpectedRevisionError('tenant-1/key-2', 3);
    expect(error).toBeInstanceOf(Error);
    expect(error).toMatchObject({
      name: 'WrongExpectedRevisionError',
      stream: 'tenant-1/key-2',
      expected: 3,
    });
  });
});
