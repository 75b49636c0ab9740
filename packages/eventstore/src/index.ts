export * from './port.ts';
export {
  PostgresEventStore,
  appendToStream,
  eventStoreMigrations,
  type PostgresEventStoreOptions,
} from './postgres.ts';
