// Apart from the package's main entry: only a process with EVENTSTORE_URL loads the client.
export { KurrentDBEventStore, type KurrentDBEventStoreOptions } from './kurrentdb-event-store.ts';
export { connectionStringProblem } from './mapping.ts';
