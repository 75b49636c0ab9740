// The projector alone: applies every event to the PostgreSQL read models.
import { createLogger, loadConfig } from '@tokenvault/platform';
import { createRuntime, prepareDatabase, runUntilSignalled } from '@tokenvault/runtime';

await runUntilSignalled(async () => {
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL);
  await prepareDatabase(config, logger);
  const runtime = await createRuntime(config, logger);
  await runtime.createProjector().start();
  runtime.logger.info('projector running');
  return runtime;
});
