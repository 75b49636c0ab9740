import {
  ANY,
  NO_STREAM,
  STREAM_EXISTS,
  WrongExpectedVersionError,
  eventTypeFilter,
  excludeSystemEvents,
  jsonEvent,
  streamNameFilter,
  type AllStreamResolvedEvent,
  type AppendStreamState,
  type EventData,
  type Filter,
  type Position as KurrentPosition,
  type ResolvedEvent,
} from '@kurrent/kurrentdb-client';
import { randomUUID } from 'node:crypto';
import {
  WrongExpectedRevisionError,
  type EventMetadata,
  type ExpectedRevision,
  type NewEvent,
  type Position,
  type RecordedEvent,
} from '../port.ts';

/*
 * Pure translations between the port and @kurrent/kurrentdb-client: unit-tested without a server
 * (mapping.unit.spec.ts), so that the adapter itself is only wiring.
 */

/** The port's positions are decimal strings: KurrentDB's are unsigned 64-bit. */
export function toPortPosition(position: KurrentPosition): Position {
  return { commit: position.commit.toString(10), prepare: position.prepare.toString(10) };
}

export function toKurrentPosition(position: Position): KurrentPosition {
  if (!/^\d+$/.test(position.commit) || !/^\d+$/.test(position.prepare)) {
    throw new TypeError(`a KurrentDB position is two decimal numbers, got ${JSON.stringify(position)}`);
  }
  return { commit: BigInt(position.commit), prepare: BigInt(position.prepare) };
}

/** The port's expected revision as the client's stream state. */
export function toStreamState(expected: ExpectedRevision): AppendStreamState {
  if (typeof expected === 'number') {
    if (!Number.isSafeInteger(expected) || expected < 0) {
      throw new TypeError(`expected revision must be a non-negative integer, got ${expected}`);
    }
    return BigInt(expected);
  }
  switch (expected) {
    case 'any':
      return ANY;
    case 'no_stream':
      return NO_STREAM;
    case 'stream_exists':
      return STREAM_EXISTS;
    default:
      throw new TypeError(`unknown expected revision ${String(expected)}`);
  }
}

/** A refused expectation becomes the port's error; anything else is passed on as it is. */
export function mapAppendError(error: unknown, stream: string, expected: ExpectedRevision): unknown {
  if (error instanceof WrongExpectedVersionError) return new WrongExpectedRevisionError(stream, expected);
  return error;
}

/** The events to append, checked like the PostgreSQL adapter checks them; ids generated when absent. */
export function toEventData(events: NewEvent[]): EventData[] {
  if (!Array.isArray(events) || events.length === 0) throw new TypeError('append needs at least one event');
  return events.map((event, index) => {
    if (typeof event.type !== 'string' || event.type.length === 0) {
      throw new TypeError(`event ${index} has no type`);
    }
    // `$`-prefixed types are the server's own; subscriptions leave them out.
    if (event.type.startsWith('$')) throw new TypeError(`event ${index} has a system event type`);
    if (event.data === undefined) throw new TypeError(`event ${index} has no data`);
    if (typeof event.metadata !== 'object' || event.metadata === null) {
      throw new TypeError(`event ${index} has no metadata`);
    }
    return jsonEvent({
      id: event.event_id ?? randomUUID(),
      type: event.type,
      // The client takes JSON objects, arrays and strings; other values travel wrapped in none of them.
      data: event.data as Record<string, unknown>,
      metadata: { ...event.metadata },
    });
  });
}

export function assertStreamName(stream: string): void {
  if (typeof stream !== 'string' || stream.length === 0) throw new TypeError('stream name must not be empty');
  if (stream.startsWith('$')) throw new TypeError('stream names starting with $ are the server’s');
}

/** System events: `$`-typed (links, metadata, stats) or in `$`-named streams. */
export function isSystemEvent(event: { type: string; streamId: string }): boolean {
  return event.type.startsWith('$') || event.streamId.startsWith('$');
}

/**
 * The server-side filter of a `$all` read or subscription: by stream-name prefix when asked (a
 * prefix never starts with `$`, so system streams stay out), else by event-type prefix when asked,
 * else every event but the system ones. System events that slip through (a `$`-typed event in a
 * user stream) are dropped by toRecordedEvent.
 */
export function allFilter(options: { streamPrefixes?: string[]; eventTypes?: string[] }): Filter {
  const { streamPrefixes, eventTypes } = options;
  if (streamPrefixes !== undefined) {
    if (streamPrefixes.length === 0 || streamPrefixes.some((prefix) => !prefix || prefix.startsWith('$'))) {
      throw new TypeError('stream prefixes must be non-empty and must not start with $');
    }
    return streamNameFilter({ prefixes: [...streamPrefixes] });
  }
  if (eventTypes !== undefined) {
    if (eventTypes.length === 0 || eventTypes.some((type) => !type || type.startsWith('$'))) {
      throw new TypeError('event types must be non-empty and must not start with $');
    }
    return eventTypeFilter({ prefixes: [...eventTypes] });
  }
  return excludeSystemEvents();
}

function isOwnMetadata(metadata: unknown): boolean {
  return (
    typeof metadata === 'object' &&
    metadata !== null &&
    !Array.isArray(metadata) &&
    !(metadata instanceof Uint8Array) &&
    typeof (metadata as { tenant_id?: unknown }).tenant_id === 'string'
  );
}

/** Metadata comes back parsed when it was JSON; anything else is not one of ours. */
export function toEventMetadata(metadata: unknown): EventMetadata {
  if (
    typeof metadata !== 'object' ||
    metadata === null ||
    Array.isArray(metadata) ||
    metadata instanceof Uint8Array
  ) {
    throw new TypeError('event metadata is not a JSON object');
  }
  const tenant = (metadata as { tenant_id?: unknown }).tenant_id;
  if (typeof tenant !== 'string') throw new TypeError('event metadata has no tenant_id');
  return metadata as EventMetadata;
}

/**
 * A resolved event of a stream or `$all` read as the port's; undefined for what is not one of the
 * application's events (system events, unresolved links, binary events, events without a tenant).
 */
export function toRecordedEvent(resolved: ResolvedEvent | AllStreamResolvedEvent): RecordedEvent | undefined {
  const event = resolved.event;
  if (!event || isSystemEvent(event) || !event.isJson) return undefined;
  // `$all` holds every stream of the server: another application's events (no tenant in their
  // metadata) are not this one's to deliver, and must not wedge a subscription.
  if (!isOwnMetadata(event.metadata)) return undefined;
  if (!event.position) throw new TypeError(`event ${event.id} has no position`);
  return {
    event_id: event.id,
    type: event.type,
    data: event.data,
    metadata: toEventMetadata(event.metadata),
    stream: event.streamId,
    revision: Number(event.revision),
    position: toPortPosition(event.position),
    created_at: event.created,
  };
}

const connectionSchemes = [
  'kurrentdb',
  'kurrentdb+discover',
  'kurrent',
  'kurrent+discover',
  'kdb',
  'kdb+discover',
  'esdb',
  'esdb+discover',
];

/**
 * Checks an EVENTSTORE_URL before the client sees it: the reason, in one line, or undefined when
 * it looks right. The client parses the rest (hosts, credentials, every other setting).
 */
export function connectionStringProblem(url: string): string | undefined {
  const match = /^([a-z+]+):\/\/([^/?#]*)(?:\/[^?#]*)?(?:\?(.*))?$/i.exec(url.trim());
  if (!match) return 'not a connection string (kurrentdb://host:2113?tls=false)';
  const [, scheme, authority, query] = match;
  if (!connectionSchemes.includes(scheme!.toLowerCase())) {
    return `unknown scheme ${scheme}:// (kurrentdb:// or esdb://, with +discover for a cluster)`;
  }
  const hosts = authority!.replace(/^[^@]*@/, '');
  if (!hosts) return 'no host';
  for (const host of hosts.split(',')) {
    const port = /:(\d*)$/.exec(host)?.[1];
    if (port !== undefined && (port === '' || Number(port) < 1 || Number(port) > 65_535)) {
      return `bad port in ${host}`;
    }
  }
  for (const pair of (query ?? '').split('&').filter(Boolean)) {
    const [name, value] = pair.split('=');
    if (name!.toLowerCase() === 'tls' && value !== 'true' && value !== 'false') {
      return `tls must be true or false, got ${value ?? 'nothing'}`;
    }
  }
  return undefined;
}

/** Where an error came from, in one line and without the connection string (it may hold a password). */
export function oneLineReason(error: unknown): string {
  const details = error as { type?: unknown; message?: unknown } | null;
  const message = typeof details?.message === 'string' ? details.message : String(error);
  const type = typeof details?.type === 'string' ? details.type : undefined;
  const line = message
    .replace(/\s+/g, ' ')
    .replace(/[a-z+]+:\/\/\S+/gi, '<url>')
    .trim();
  // The client's errors often carry only their class name as the message.
  if (type && (line === '' || /^\w+Error$/.test(line))) return describedErrorTypes[type] ?? type;
  return type && !line.toLowerCase().includes(type.replace(/-/g, '')) ? `${type}: ${line}` : line;
}

const describedErrorTypes: Record<string, string> = {
  unavailable: 'no connection to the server (unreachable, refused, or not a KurrentDB node)',
  'deadline-exceeded': 'no answer from the server within the deadline',
  'access-denied': 'access denied (check the credentials in the connection string)',
  'not-leader': 'the node is not the leader (use +discover, or requiresLeader=false)',
};
