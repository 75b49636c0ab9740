export * from './port.ts';
export {
  PostgresEventStore,
  appendToStream,
  eventStoreMigrations,
  type PostgresEventStoreOptions,
} from './postgres.ts';
export { backlogAfter, type Backlog } from './metrics.ts';
