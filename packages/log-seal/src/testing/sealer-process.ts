// The sealing processor in a process of its own, for the crash test: it is killed with SIGKILL
// while a batch's transaction is open. SEALER_PAUSE_MS holds each batch's transaction open that
// long after the seal is written, before the checkpoint moves, so that the kill lands mid-batch.
import { setTimeout as sleep } from 'node:timers/promises';
import { createLogger, createPool } from '@tokenvault/platform';
import { PostgresEventStore } from '@tokenvault/eventstore';
import { Processor } from '@tokenvault/cqrs';
import { logSealHandler, logSealerName } from '../sealer.ts';

if (process.argv[1] === new URL(import.meta.url).pathname) {
  const pool = createPool({
    connectionString: process.env.DATABASE_URL!,
    max: 2,
    applicationName: 'log-sealer-crash-test',
  });
  const sealing = logSealHandler({});
  const pauseMs = Number(process.env.SEALER_PAUSE_MS ?? 0);
  await new Processor({
    name: logSealerName,
    store: new PostgresEventStore(pool),
    pool,
    logger: createLogger('warn'),
    batchSize: Number(process.env.SEALER_BATCH_SIZE ?? 10),
    handler: {
      async handle(events, tx) {
        await sealing.handle(events, tx);
        await sleep(pauseMs);
      },
    },
  }).start();
  process.send?.('started');
}
