import { describe, expect, it } from 'vitest';
import { WrongExpectedVersionError } from '@kurrent/kurrentdb-client';
import { WrongExpectedRevisionError } from '../port.ts';
import {
  allFilter,
  connectionStringProblem,
  isSystemEvent,
  mapAppendError,
  oneLineReason,
  toEventData,
  toEventMetadata,
  toKurrentPosition,
  toPortPosition,
  toRecordedEvent,
  toStreamState,
} from './mapping.ts';
import { findKurrentDBServer } from './server.ts';

const metadata = { tenant_id: '6f1c1b5e-2f4a-4d8e-9d3b-0c2a7e5b9f10', actor_type: 'system' as const };

describe('KurrentDB positions', () => {
  it('are decimal strings both ways, beyond 2^53 too', () => {
    const big = { commit: 18_446_744_073_709_551_615n, prepare: 9_007_199_254_740_993n };
    expect(toPortPosition(big)).toEqual({ commit: '18446744073709551615', prepare: '9007199254740993' });
    expect(toKurrentPosition(toPortPosition(big))).toEqual(big);
    expect(toPortPosition({ commit: 0n, prepare: 0n })).toEqual({ commit: '0', prepare: '0' });
  });

  it('refuses what is not two decimal numbers', () => {
    expect(() => toKurrentPosition({ commit: '-1', prepare: '0' })).toThrow(TypeError);
    expect(() => toKurrentPosition({ commit: '1e3', prepare: '0' })).toThrow(TypeError);
    expect(() => toKurrentPosition({ commit: '', prepare: '0' })).toThrow(TypeError);
  });
});

describe('KurrentDB stream states', () => {
  it('maps every expected revision of the port', () => {
    expect(toStreamState('any')).toBe('any');
    expect(toStreamState('no_stream')).toBe('no_stream');
    expect(toStreamState('stream_exists')).toBe('stream_exists');
    expect(toStreamState(0)).toBe(0n);
    expect(toStreamState(41)).toBe(41n);
  });

  it('refuses a revision that is not a non-negative integer, or an unknown word', () => {
    expect(() => toStreamState(-1)).toThrow(TypeError);
    expect(() => toStreamState(1.5)).toThrow(TypeError);
    expect(() => toStreamState('latest' as never)).toThrow(TypeError);
  });
});

describe('KurrentDB append errors', () => {
  it('maps the server’s wrong expected version to the port’s error, naming the stream and expectation', () => {
    const serverError = new WrongExpectedVersionError(undefined, {
      streamName: 'tokens/1',
      expected: 3n,
      current: 5n,
    });
    const mapped = mapAppendError(serverError, 'tokens/1', 3);
    expect(mapped).toBeInstanceOf(WrongExpectedRevisionError);
    expect(mapped).toMatchObject({ stream: 'tokens/1', expected: 3 });
  });

  it('passes any other error on as it is', () => {
    const other = new Error('unavailable');
    expect(mapAppendError(other, 's', 'any')).toBe(other);
  });
});

describe('KurrentDB events written', () => {
  it('keep their id, type, data, and metadata as JSON; an id is generated when absent', () => {
    const [kept, generated] = toEventData([
      { event_id: '0b7e1f9c-1d1e-4c55-9d3a-2a9f3b1c0d01', type: 'TokenCreated', data: { a: 1 }, metadata },
      { type: 'TokenCreated', data: { b: 2 }, metadata },
    ]);
    expect(kept).toMatchObject({
      id: '0b7e1f9c-1d1e-4c55-9d3a-2a9f3b1c0d01',
      contentType: 'application/json',
      type: 'TokenCreated',
      data: { a: 1 },
      metadata,
    });
    expect(generated!.id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('are refused when empty, untyped, system-typed, without data or metadata', () => {
    expect(() => toEventData([])).toThrow('at least one event');
    expect(() => toEventData([{ type: '', data: {}, metadata }])).toThrow('no type');
    expect(() => toEventData([{ type: '$metadata', data: {}, metadata }])).toThrow('system event type');
    expect(() => toEventData([{ type: 'E', data: undefined, metadata }])).toThrow('no data');
    expect(() => toEventData([{ type: 'E', data: {}, metadata: null as never }])).toThrow('no metadata');
  });
});

describe('KurrentDB events read', () => {
  const recorded = (overrides: Record<string, unknown> = {}) => ({
    event: {
      streamId: 'tokens/1',
      id: '0b7e1f9c-1d1e-4c55-9d3a-2a9f3b1c0d01',
      isJson: true,
      revision: 2n,
      type: 'TokenCreated',
      created: new Date('2026-01-01T00:00:00Z'),
      data: { a: 1 },
      metadata,
      position: { commit: 12_345n, prepare: 12_340n },
      ...overrides,
    },
  });

  it('become the port’s recorded events', () => {
    expect(toRecordedEvent(recorded() as never)).toEqual({
      event_id: '0b7e1f9c-1d1e-4c55-9d3a-2a9f3b1c0d01',
      type: 'TokenCreated',
      data: { a: 1 },
      metadata,
      stream: 'tokens/1',
      revision: 2,
      position: { commit: '12345', prepare: '12340' },
      created_at: new Date('2026-01-01T00:00:00Z'),
    });
  });

  it('leave out system events, unresolved links and binary events', () => {
    expect(toRecordedEvent(recorded({ type: '$metadata' }) as never)).toBeUndefined();
    expect(toRecordedEvent(recorded({ streamId: '$$tokens/1' }) as never)).toBeUndefined();
    expect(toRecordedEvent(recorded({ isJson: false }) as never)).toBeUndefined();
    expect(toRecordedEvent({})).toBeUndefined();
    expect(isSystemEvent({ type: '$>', streamId: '$ce-tokens' })).toBe(true);
    expect(isSystemEvent({ type: 'TokenCreated', streamId: 'tokens/1' })).toBe(false);
  });

  it('need JSON metadata with a tenant', () => {
    expect(toEventMetadata({ tenant_id: 't', actor_id: 'a' })).toEqual({ tenant_id: 't', actor_id: 'a' });
    expect(() => toEventMetadata(new Uint8Array([1]))).toThrow('not a JSON object');
    expect(() => toEventMetadata(['x'])).toThrow('not a JSON object');
    expect(() => toEventMetadata({ actor_id: 'a' })).toThrow('no tenant_id');
    // Another application's events on the same server are not delivered.
    expect(toRecordedEvent(recorded({ metadata: undefined }) as never)).toBeUndefined();
    expect(toRecordedEvent(recorded({ metadata: { user: 'x' } }) as never)).toBeUndefined();
  });
});

describe('KurrentDB $all filters', () => {
  it('exclude system events by default, on the server', () => {
    const filter = allFilter({});
    expect(filter).toMatchObject({ filterOn: 'eventType' });
    expect('regex' in filter && new RegExp(filter.regex).test('$metadata')).toBe(false);
    expect('regex' in filter && new RegExp(filter.regex).test('TokenCreated')).toBe(true);
  });

  it('select by stream-name prefix, or by event-type prefix', () => {
    expect(allFilter({ streamPrefixes: ['tokens/', 'tenants/'] })).toMatchObject({
      filterOn: 'streamName',
      prefixes: ['tokens/', 'tenants/'],
    });
    expect(allFilter({ eventTypes: ['Token'] })).toMatchObject({
      filterOn: 'eventType',
      prefixes: ['Token'],
    });
  });

  it('refuse prefixes that are empty or would reach the server’s own streams', () => {
    expect(() => allFilter({ streamPrefixes: [] })).toThrow(TypeError);
    expect(() => allFilter({ streamPrefixes: [''] })).toThrow(TypeError);
    expect(() => allFilter({ streamPrefixes: ['$ce-'] })).toThrow(TypeError);
    expect(() => allFilter({ eventTypes: ['$'] })).toThrow(TypeError);
  });
});

describe('EVENTSTORE_URL', () => {
  it('accepts kurrentdb:// and esdb:// connection strings, TLS on or off, single node or cluster', () => {
    for (const url of [
      'kurrentdb://127.0.0.1:2113?tls=false',
      'kurrentdb://admin:changeit@kurrentdb:2113',
      'esdb://localhost:2113?tls=true',
      'kurrentdb+discover://node1:2113,node2:2113,node3:2113?tls=false&keepAliveTimeout=10000',
      'esdb+discover://cluster.internal:2113',
    ]) {
      expect(connectionStringProblem(url), url).toBeUndefined();
    }
  });

  it('names what is wrong with one that is not', () => {
    expect(connectionStringProblem('postgres://127.0.0.1/events')).toMatch(/unknown scheme postgres/);
    expect(connectionStringProblem('127.0.0.1:2113')).toMatch(/not a connection string/);
    expect(connectionStringProblem('kurrentdb://')).toBe('no host');
    expect(connectionStringProblem('kurrentdb://host:99999?tls=false')).toMatch(/bad port/);
    expect(connectionStringProblem('kurrentdb://host:2113?tls=maybe')).toMatch(/tls must be true or false/);
  });

  it('reasons come in one line, without the connection string (it may hold a password)', () => {
    const reason = oneLineReason(new Error('connect failed\n  to kurrentdb://admin:secret@host:2113'));
    expect(reason).toBe('connect failed to <url>');
    expect(oneLineReason({ type: 'unavailable', message: 'No connection established' })).toBe(
      'unavailable: No connection established',
    );
    expect(oneLineReason({ type: 'unavailable', message: 'UnavailableError' })).toMatch(
      /^no connection to the server/,
    );
  });
});

describe('the KurrentDB suite’s server', () => {
  it('is EVENTSTORE_URL when set, before any Docker engine is asked', () => {
    expect(findKurrentDBServer({ EVENTSTORE_URL: 'kurrentdb://k:2113?tls=false' })).toEqual({
      kind: 'url',
      url: 'kurrentdb://k:2113?tls=false',
    });
  });
});
