import type { AddressInfo } from 'node:net';
import { createLogger, listenHttp, type Config } from '@tokenvault/platform';
import type { Clock } from '@tokenvault/tenancy';
import { createGatewayApp } from './gateway.ts';
import { startProjectorThread } from './projector-thread.ts';
import { relayFor, startInvitationMailOf, startReactorWorkerOf, startSignInMailOf } from './subscribers.ts';
import { createRuntime, prepareDatabase, type Runtime } from './runtime.ts';
import { startTokenKeySweeperOf } from './token-key-sweeper.ts';

export interface RunningService {
  url: string;
  runtime: Runtime;
  close(): Promise<void>;
}

/** Everything in one process: migrations, the projector (on its own thread) and the gateway. */
export async function startAllInOne(
  config: Config,
  options: { logDestination?: NodeJS.WritableStream; clock?: Clock } = {},
): Promise<RunningService> {
  const logger = createLogger(config.LOG_LEVEL, 'tokenvault', options.logDestination);
  await prepareDatabase(config, logger);
  const runtime = await createRuntime(config, logger, options.clock ? { clock: options.clock } : {});
  const projector = await startProjectorThread(config);
  const mail = await startInvitationMailOf(runtime);
  const signInMail = startSignInMailOf(runtime);
  const reactorWorker = await startReactorWorkerOf(runtime);
  const tokenKeySweeper = startTokenKeySweeperOf(runtime);
  // Kafka is downstream: the relay connects in the background and never holds up the API.
  const relay = relayFor(config, { store: runtime.store, pool: runtime.ownerPool }, logger);
  await relay?.start();
  const app = createGatewayApp(runtime);
  const server = await listenHttp(app, config.PORT, config.HOST);
  server.keepAliveTimeout = 65_000;
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  logger.info({ url, publicUrl: config.PUBLIC_URL }, 'tokenvault is listening');
  return {
    url,
    runtime,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await relay?.stop();
      // Jobs in flight finish (or, past the forced-exit timeout, are released as stalled).
      await mail.stop();
      await signInMail.stop();
      await reactorWorker.close();
      await tokenKeySweeper.stop();
      await projector.stop();
      await runtime.close();
    },
  };
}
