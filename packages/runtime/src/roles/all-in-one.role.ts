import { checkDependencies, createLogger, logDestinationFor, type Config } from '@tokenvault/platform';
import type { Clock } from '@tokenvault/platform';
import { createRuntime, prepareDatabase, type Runtime } from '../runtime.ts';
import { startGateway } from './gateway.role.ts';
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
 * thread, then the worker, the relay (with KAFKA_BROKERS) and the gateway on one runtime.
 */
export async function startAllInOne(
  config: Config,
  options: { logDestination?: NodeJS.WritableStream; clock?: Clock } = {},
): Promise<RunningService> {
  const logDestination = options.logDestination ?? logDestinationFor(config);
  const logger = createLogger(config.LOG_LEVEL, 'tokenvault', logDestination);
  // Before anything opens a pool or a queue: one line per unreachable dependency, never "listening".
  await checkDependencies(config, ['postgres', 'redis', 'kafka', 'smtp'], {
    warn: (line) => logger.warn(line),
  });
  await prepareDatabase(config, logger);
  const runtime = await createRuntime(config, logger, options.clock ? { clock: options.clock } : {});
  const projector = await startProjectorThread(config, logDestination);
  const worker = await startWorker(config, { runtime });
  const relay = config.KAFKA_BROKERS
    ? await startRelay(config, { eventLog: { store: runtime.store, pool: runtime.ownerPool }, logger })
    : undefined;
  const gateway = await startGateway(config, { runtime });
  logger.info({ url: gateway.url, publicUrl: config.PUBLIC_URL }, 'tokenvault is listening');
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
