import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { Writable } from 'node:stream';
import type { Config } from '@tokenvault/platform';
import { startProjector } from './projector.role.ts';
import type { StartedRole } from './role.ts';

type Message =
  | { kind: 'started' }
  | { kind: 'stopped' }
  | { kind: 'failed'; message: string }
  | { kind: 'log'; line: string };

/**
 * The projector role on a thread of its own, inside the all-in-one process: its database round
 * trips do not queue behind the HTTP handlers on the main event loop, which keeps projection lag
 * (and so the read-your-writes wait of every write) short under load. Its log lines come back to
 * the main thread, which writes them where its own go (a test's log sink included).
 */
export async function startProjectorThread(
  config: Config,
  logDestination: NodeJS.WritableStream = process.stdout,
): Promise<StartedRole> {
  // This very module is the thread's entry: Node 24 runs TypeScript (type stripping) in threads too.
  const worker = new Worker(new URL(import.meta.url), {
    workerData: { entry: import.meta.url, config },
  });
  worker.on('message', (message: Message) => {
    if (message.kind === 'log') logDestination.write(message.line);
  });
  const first = await nextLifecycleMessage(worker);
  if (first.kind !== 'started') {
    await worker.terminate();
    throw new Error(
      `the projector thread failed to start: ${first.kind === 'failed' ? first.message : first.kind}`,
    );
  }
  return {
    async close() {
      const stopped = nextLifecycleMessage(worker).catch(() => undefined);
      worker.postMessage('stop');
      await Promise.race([stopped, new Promise((resolve) => setTimeout(resolve, 10_000))]);
      await worker.terminate();
    },
  };
}

/** The thread's next message that is not a log line; rejects if the thread fails or exits first. */
function nextLifecycleMessage(worker: Worker): Promise<Exclude<Message, { kind: 'log' }>> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: Message) => {
      if (message.kind === 'log') return;
      settle();
      resolve(message);
    };
    const onError = (error: Error) => {
      settle();
      reject(error);
    };
    const onExit = (code: number) => onError(new Error(`the thread exited with code ${code}`));
    const settle = () => {
      worker.off('message', onMessage);
      worker.off('error', onError);
      worker.off('exit', onExit);
    };
    worker.on('message', onMessage);
    worker.on('error', onError);
    worker.on('exit', onExit);
  });
}

async function runInThread(config: Config): Promise<void> {
  const port = parentPort!;
  const logDestination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      port.postMessage({ kind: 'log', line: chunk.toString('utf8') } satisfies Message);
      done();
    },
  });
  let projector: StartedRole;
  try {
    projector = await startProjector(config, { databasePrepared: true, logDestination });
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
