// Run as a child process by the uniqueness contract's crash cases: appends through an
// ExternalEventStore (claims in CLAIMS_DATABASE_URL; events in KurrentDB at EVENTSTORE_URL, or in
// the PostgreSQL store at EVENTS_DATABASE_URL used as an external one) and is killed with SIGKILL
// right after the claim (before the append reaches the store) or right after the append (before
// the claim is settled). Exit code 3 says it failed before reaching its stage.
import { createPool } from '@tokenvault/platform';
import { ExternalEventStore } from '../external/external-event-store.ts';
import { PostgresEventStore } from '../postgres/postgres-event-store.ts';
import type { EventStore, NewEvent } from '../port.ts';
import { contractUniquenessRules } from './claims-fixture.ts';

const { STAGE, STREAM, EVENTS, CLAIMS_DATABASE_URL, EVENTS_DATABASE_URL, EVENTSTORE_URL } = process.env;
const die = () => process.kill(process.pid, 'SIGKILL');

try {
  const claimsPool = createPool({ connectionString: CLAIMS_DATABASE_URL!, max: 2 });
  let events: EventStore;
  if (EVENTSTORE_URL) {
    const { KurrentDBEventStore } = await import('../kurrentdb/kurrentdb-event-store.ts');
    events = KurrentDBEventStore.fromConnectionString(EVENTSTORE_URL);
  } else {
    events = new PostgresEventStore(createPool({ connectionString: EVENTS_DATABASE_URL!, max: 2 }));
  }
  const crashing: EventStore = {
    async append(stream, appended, options) {
      if (STAGE === 'after-claim') die();
      const result = await events.append(stream, appended, options);
      if (STAGE === 'after-append') die();
      return result;
    },
    appendStreams: (appends, options) => events.appendStreams(appends, options),
    readStream: (stream) => events.readStream(stream),
    readAll: (options) => events.readAll(options),
    headPosition: () => events.headPosition(),
    subscribeAll: (options) => events.subscribeAll(options),
    claimHolder: (scope, key) => events.claimHolder(scope, key),
    close: () => events.close(),
  };
  const store = new ExternalEventStore({
    events: crashing,
    pool: claimsPool,
    uniqueness: contractUniquenessRules,
  });
  await store.append(STREAM!, JSON.parse(EVENTS!) as NewEvent[], { expectedRevision: 'no_stream' });
  console.error('crash-append: the append finished without reaching its stage');
  process.exit(3);
} catch (error) {
  console.error('crash-append failed:', error);
  process.exit(3);
}
