// A projector in a process of its own, for the crash test: it is killed with SIGKILL mid-stream.
import { createLogger, createPool } from '@tokenvault/platform';
import { PostgresEventStore } from '@tokenvault/eventstore';
import { Projector, type Projection } from '@tokenvault/cqrs';
import { allProjections, readModelsProjectorName } from '../projections.ts';

/** Records every application of every event: a double application shows as a repeated row. */
export const appliedEventsProjection: Projection = {
  name: 'applied-events',
  tables: ['applied_events'],
  handles: ['TokenCreated', 'TokenDeleted'],
  async apply(events, tx) {
    await tx.query('INSERT INTO applied_events (event_id) SELECT unnest($1::uuid[])', [
      events.map((event) => event.event_id),
    ]);
  },
};

export const crashTestProjections = [...allProjections, appliedEventsProjection];

if (process.argv[1] === new URL(import.meta.url).pathname) {
  const connectionString = process.env.DATABASE_URL!;
  const pool = createPool({ connectionString, max: 2 });
  const store = new PostgresEventStore(pool);
  await new Projector({
    name: readModelsProjectorName,
    store,
    pool,
    projections: crashTestProjections,
    logger: createLogger('warn'),
    batchSize: Number(process.env.PROJECTOR_BATCH_SIZE ?? 20),
  }).start();
  process.send?.('started');
}
