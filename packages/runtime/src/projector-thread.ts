import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { once } from 'node:events';
import { createLogger, type Config } from '@tokenvault/platform';
import { Projector } from '@tokenvault/cqrs';
import { projectorProjections, readModelsProjectorName } from './projections.ts';
import { connectEventStore, logSealerFor } from './subscribers.ts';

type Message = { kind: 'started' } | { kind: 'stopped' } | { kind: 'failed'; message: string };

/**
 * The projector on a thread of its own, inside the one process: its database round trips do not
 * queue behind the HTTP handlers on the main event loop, which keeps projection lag (and so the
 * read-your-writes wait of every write) short under load.
 */
export async function startProjectorThread(config: Config): Promise<{ stop(): Promise<void> }> {
  // This very module is the thread's entry: Node 24 runs TypeScript (type stripping) in threads too.
  const worker = new Worker(new URL(import.meta.url), {
    workerData: { entry: import.meta.url, config },
  });
  const [first] = (await once(worker, 'message')) as [Message];
  if (first.kind !== 'started') {
    await worker.terminate();
    throw new Error(
      `the projector thread failed to start: ${first.kind === 'failed' ? first.message : first.kind}`,
    );
  }
  return {
    async stop() {
      const stopped = once(worker, 'message');
      worker.postMessage('stop');
      await Promise.race([stopped, new Promise((resolve) => setTimeout(resolve, 10_000))]);
      await worker.terminate();
    },
  };
}

async function runInThread(config: Config): Promise<void> {
  const port = parentPort!;
  const logger = createLogger(config.LOG_LEVEL, 'tokenvault-projector');
  // Read models are rebuilt from the events, and the checkpoint commits with them: a commit lost
  // in a crash is replayed, so the projector need not wait for its WAL flush.
  const connection = await connectEventStore(config, logger, {
    applicationName: 'tokenvault-projector',
    // The projector's, the sealer's (the seals commit with their checkpoint too) and a reader.
    max: 3,
    settings: { synchronous_commit: 'off' },
  });
  const { pool, store } = connection;
  const projector = new Projector({
    name: readModelsProjectorName,
    store,
    pool,
    projections: projectorProjections(config),
    logger,
  });
  const sealer = logSealerFor(config, connection, logger);
  try {
    await projector.start();
    await sealer?.start();
    await projector.ready(60_000);
  } catch (error) {
    port.postMessage({ kind: 'failed', message: (error as Error).message } satisfies Message);
    return;
  }
  port.on('message', (message) => {
    if (message !== 'stop') return;
    void (async () => {
      await projector.stop();
      await sealer?.stop();
      await connection.close();
      port.postMessage({ kind: 'stopped' } satisfies Message);
    })();
  });
  port.postMessage({ kind: 'started' } satisfies Message);
}

if (!isMainThread && (workerData as { entry?: string } | undefined)?.entry === import.meta.url) {
  await runInThread((workerData as { config: Config }).config);
}
