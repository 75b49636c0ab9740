// The tree-head signer in a process of its own, for the crash test: it is killed with SIGKILL
// while a batch's transaction is open. TREE_HEAD_SIGNER_PAUSE_MS holds each batch's transaction
// open that long after the tree head is written, before the checkpoint moves, so that the kill
// lands mid-batch.
import { setTimeout as sleep } from 'node:timers/promises';
import { createLogger, createPool } from '@tokenvault/platform';
import { PostgresEventStore } from '@tokenvault/eventstore';
import { EventProcessor } from '@tokenvault/cqrs';
import { treeHeadHandler, treeHeadSignerName } from '../tree-head-signer.ts';

if (process.argv[1] === new URL(import.meta.url).pathname) {
  const pool = createPool({
    connectionString: process.env.DATABASE_URL!,
    max: 2,
    applicationName: 'tree-head-signer-crash-test',
  });
  const treeHeads = treeHeadHandler({});
  const pauseMs = Number(process.env.TREE_HEAD_SIGNER_PAUSE_MS ?? 0);
  await new EventProcessor({
    name: treeHeadSignerName,
    store: new PostgresEventStore(pool),
    pool,
    logger: createLogger('warn'),
    batchSize: Number(process.env.TREE_HEAD_SIGNER_BATCH_SIZE ?? 10),
    handler: {
      async handle(events, tx) {
        await treeHeads.handle(events, tx);
        await sleep(pauseMs);
      },
    },
  }).start();
  process.send?.('started');
}
