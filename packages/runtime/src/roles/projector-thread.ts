import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { once } from 'node:events';
import type { Config } from '@tokenvault/platform';
import { startProjector } from './projector.ts';
import type { StartedRole } from './role.ts';

type Message = { kind: 'started' } | { kind: 'stopped' } | { kind: 'failed'; message: string };

/**
 * The projector role on a thread of its own, inside the all-in-one process: its database round
 * trips do not queue behind the HTTP handlers on the main event loop, which keeps projection lag
 * (and so the read-your-writes wait of every write) short under load.
 */
export async function startProjectorThread(config: Config): Promise<StartedRole> {
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
    async close() {
      const stopped = once(worker, 'message');
      worker.postMessage('stop');
      await Promise.race([stopped, new Promise((resolve) => setTimeout(resolve, 10_000))]);
      await worker.terminate();
    },
  };
}

async function runInThread(config: Config): Promise<void> {
  const port = parentPort!;
  let projector: StartedRole;
  try {
    projector = await startProjector(config, { databasePrepared: true });
  } catch (error) {
    port.postMessage({ kind: 'failed', message: (error as Error).message } satisfies Message);
    return;
  }
  port.on('message', (message) => {
    if (message !== 'stop') return;
    void projector.close().then(() => port.postMessage({ kind: 'stopped' } satisfies Message));
  });
  port.postMessage({ kind: 'started' } satisfies Message);
}

if (!isMainThread && (workerData as { entry?: string } | undefined)?.entry === import.meta.url) {
  await runInThread((workerData as { config: Config }).config);
}
