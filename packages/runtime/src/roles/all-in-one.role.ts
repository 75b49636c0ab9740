import { checkDependencies, createLogger, logDestinationFor, type Config } from '@tokenvault/platform';
import type { Clock } from '@tokenvault/platform';
import { isHttpProcess, startHttpProcesses } from '../http-processes.ts';
import { createRuntime, prepareDatabase, type Runtime } from '../runtime.ts';
import { serveHttp, startGateway } from './gateway.role.ts';
import { startProjectorThread } from './projector-thread.role.ts';
import { startRelay } from './relay.role.ts';
import { startWorker } from './worker.role.ts';

export interface RunningService {
  url: string;
  runtime: Runtime;
  close(): Promise<void>;
}

/**
 * Every role in one process (`npm start`): its dependencies checked, the database prepared once, the projector on its own
 * thread, then the worker, the relay (with KAFKA_BROKERS) and the gateway on one runtime. With
 * HTTP_PROCESSES > 1 this process keeps all but the gateway and forks that many HTTP processes,
 * which serve HTTP only (each on a runtime of its own).
 */
export async function startAllInOne(
  config: Config,
  options: { logDestination?: NodeJS.WritableStream; clock?: Clock } = {},
): Promise<RunningService> {
  const logDestination = options.logDestination ?? logDestinationFor(config);
  const logger = createLogger(config.LOG_LEVEL, 'tokenvault', logDestination);
  const clock = options.clock ? { clock: options.clock } : {};
  if (isHttpProcess()) {
    const runtime = await createRuntime(config, logger, clock);
    const gateway = await serveHttp(config, runtime, logger, { closesRuntime: true });
    return { url: gateway.url, runtime, close: () => gateway.close() };
  }
  // Before anything opens a pool or a queue: one line per unreachable dependency, never "listening".
  await checkDependencies(config, ['postgres', 'redis', 'kafka', 'smtp'], {
    warn: (line) => logger.warn(line),
  });
  await prepareDatabase(config, logger);
  const runtime = await createRuntime(config, logger, clock);
  const projector = await startProjectorThread(config, logDestination);
  const worker = await startWorker(config, { runtime });
  const relay = config.KAFKA_BROKERS
    ? await startRelay(config, { eventLog: { store: runtime.store, pool: runtime.ownerPool }, logger })
    : undefined;
  const gateway =
    config.HTTP_PROCESSES > 1
      ? await startHttpProcesses(config.HTTP_PROCESSES, logger).then((processes) => ({
          url: `http://127.0.0.1:${processes.port}`,
          close: () => processes.close(),
        }))
      : await startGateway(config, { runtime });
  logger.info(
    { url: gateway.url, publicUrl: config.PUBLIC_URL, httpProcesses: config.HTTP_PROCESSES },
    'tokenvault is listening',
  );
  return {
    url: gateway.url,
    runtime,
    async close() {
      await gateway.close();
      await relay?.close();
      await worker.close();
      await projector.close();
      await runtime.close();
    },
  };
}
