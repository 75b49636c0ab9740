import type { AddressInfo } from 'node:net';
import {
  checkDependencies,
  createLogger,
  listenHttp,
  logDestinationFor,
  type Config,
  type Logger,
} from '@tokenvault/platform';
import { createGatewayApp } from '../gateway.ts';
import { isHttpProcess, startHttpProcesses } from '../http-processes.ts';
import { createRuntime, prepareDatabase, type Runtime } from '../runtime.ts';
import type { StartedRole } from './role.ts';

export interface RunningGateway extends StartedRole {
  url: string;
}

/**
 * The gateway role: every route over HTTP on PORT and HOST, with health, readiness, metrics and
 * the API documents. Alone (services/api-gateway) it opens a runtime of its own, or, with
 * HTTP_PROCESSES > 1, checks and migrates once and forks that many HTTP processes, each with its
 * runtime; the all-in-one process gives it its runtime, which it then leaves open at close.
 */
export async function startGateway(config: Config, shared?: { runtime: Runtime }): Promise<RunningGateway> {
  const logger =
    shared?.runtime.logger ?? createLogger(config.LOG_LEVEL, 'tokenvault', logDestinationFor(config));
  if (!shared && !isHttpProcess()) {
    await checkDependencies(config, ['postgres', 'redis']);
    await prepareDatabase(config, logger);
    if (config.HTTP_PROCESSES > 1) {
      const processes = await startHttpProcesses(config.HTTP_PROCESSES, logger);
      logger.info({ port: processes.port, processes: config.HTTP_PROCESSES }, 'api-gateway listening');
      return { url: `http://127.0.0.1:${processes.port}`, close: () => processes.close() };
    }
  }
  const runtime = shared?.runtime ?? (await createRuntime(config, logger));
  return serveHttp(config, runtime, logger, { closesRuntime: !shared });
}

/** Listens with the gateway's app on `runtime`; close() stops listening (and closes the runtime if asked). */
export async function serveHttp(
  config: Config,
  runtime: Runtime,
  logger: Logger,
  options: { closesRuntime: boolean },
): Promise<RunningGateway> {
  const server = await listenHttp(createGatewayApp(runtime), config.PORT, config.HOST);
  // Longer than the idle timeouts of the load balancers in front, which close first.
  server.keepAliveTimeout = 65_000;
  const { port } = server.address() as AddressInfo;
  logger.info({ port }, isHttpProcess() ? 'HTTP process listening' : 'api-gateway listening');
  return {
    url: `http://127.0.0.1:${port}`,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      if (options.closesRuntime) await runtime.close();
    },
  };
}
