import type { AddressInfo } from 'node:net';
import {
  checkDependencies,
  createLogger,
  listenHttp,
  logDestinationFor,
  type Config,
} from '@tokenvault/platform';
import { createGatewayApp } from '../gateway.ts';
import { createRuntime, prepareDatabase, type Runtime } from '../runtime.ts';
import type { StartedRole } from './role.ts';

export interface RunningGateway extends StartedRole {
  url: string;
}

/**
 * The gateway role: every route over HTTP on PORT and HOST, with health, readiness, metrics and
 * the API documents. Alone (services/api-gateway) it opens a runtime of its own; the all-in-one
 * process gives it its runtime, which it then leaves open at close.
 */
export async function startGateway(config: Config, shared?: { runtime: Runtime }): Promise<RunningGateway> {
  const logger =
    shared?.runtime.logger ?? createLogger(config.LOG_LEVEL, 'tokenvault', logDestinationFor(config));
  if (!shared) {
    await checkDependencies(config, ['postgres', 'redis']);
    await prepareDatabase(config, logger);
  }
  const runtime = shared?.runtime ?? (await createRuntime(config, logger));
  const server = await listenHttp(createGatewayApp(runtime), config.PORT, config.HOST);
  // Longer than the idle timeouts of the load balancers in front, which close first.
  server.keepAliveTimeout = 65_000;
  const { port } = server.address() as AddressInfo;
  logger.info({ port }, 'api-gateway listening');
  return {
    url: `http://127.0.0.1:${port}`,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      if (!shared) await runtime.close();
    },
  };
}
