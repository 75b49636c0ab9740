export * from './port.ts';
export { eventStoreMigrations, eventsChannel } from './postgres/event-store-migrations.ts';
export { appendToStream } from './postgres/append.ts';
export { readCommitted } from './postgres/read.ts';
export { independentRowsStatement } from './postgres/independent-rows.ts';
export {
  PostgresEventStore,
  type InlineApplyContext,
  type InlineProjection,
  type PostgresEventStoreOptions,
} from './postgres/postgres-event-store.ts';
export { backlogAfter, type Backlog } from './append-metrics.ts';
export {
  ExternalEventStore,
  afterAppendHook,
  type AppendHook,
  type AppendHookContext,
  type ExternalEventStoreOptions,
  type PendingEvent,
  type PendingOf,
  type RepairOutcome,
} from './external/external-event-store.ts';
