import type { Config, Logger, Pool } from '@tokenvault/platform';
import { ExternalEventStore, type AppendHook, type RecordedEvent } from '@tokenvault/eventstore';
import { contextExternalEffects } from './contexts.ts';
import { uniquenessOf } from './projections.ts';

/**
 * The write-side effects (writeSideProjections) of an append to an external store, as
 * before/after hooks (see AppendHook): tenant key shredding runs after the append; a token's key
 * is stored before it (the events are encrypted with it) and taken back when it is refused.
 */
export const externalAppendHooks: AppendHook[] = contextExternalEffects;

// Loaded only with EVENTSTORE_URL: the client costs half a second to load.
const loadKurrentDB = () => import('@tokenvault/eventstore/kurrentdb');

/**
 * EVENTSTORE_URL set: events in KurrentDB, claims and write-side effects in DATABASE_URL (the
 * owner pool), with their repairs running in this process.
 */
export async function connectExternalEventStore(
  url: string,
  pool: Pool,
  logger: Logger,
  onCommitted?: (events: readonly RecordedEvent[]) => void,
): Promise<ExternalEventStore> {
  const { KurrentDBEventStore } = await loadKurrentDB();
  const onBackgroundError = (error: unknown) => logger.warn({ err: error }, 'event store background error');
  const store = new ExternalEventStore({
    events: KurrentDBEventStore.fromConnectionString(url, { onBackgroundError }),
    pool,
    uniqueness: uniquenessOf,
    hooks: externalAppendHooks,
    ...(onCommitted ? { onCommitted } : {}),
    onBackgroundError,
  });
  store.startRepairs();
  return store;
}

/**
 * At start: an unusable EVENTSTORE_URL stops the process within 10 s with one line
 * (EventStoreUnavailableError), rather than failing every request.
 */
export async function checkExternalEventStore(config: Config): Promise<void> {
  if (!config.EVENTSTORE_URL) return;
  const { KurrentDBEventStore } = await loadKurrentDB();
  const store = KurrentDBEventStore.fromConnectionString(config.EVENTSTORE_URL);
  try {
    await store.checkReachable(10_000);
  } finally {
    await store.close().catch(() => {});
  }
}
