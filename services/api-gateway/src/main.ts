// The REST gateway alone (no projector): for deployments that scale the two apart.
import type { AddressInfo } from 'node:net';
import { createLogger, listenHttp, loadConfig } from '@tokenvault/platform';
import { createGatewayApp, createRuntime, prepareDatabase, runUntilSignalled } from '@tokenvault/runtime';

await runUntilSignalled(async () => {
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL);
  await prepareDatabase(config, logger);
  const runtime = await createRuntime(config, logger);
  const server = await listenHttp(createGatewayApp(runtime), config.PORT, config.HOST);
  runtime.logger.info({ port: (server.address() as AddressInfo).port }, 'api-gateway listening');
  return {
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await runtime.close();
    },
  };
});
