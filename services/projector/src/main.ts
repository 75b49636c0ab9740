// The projector alone: applies every event to the PostgreSQL read models.
import { loadConfig } from '@tokenvault/platform';
import { createRuntime, prepareDatabase, runUntilSignalled } from '@tokenvault/runtime';

await runUntilSignalled(async () => {
  const config = loadConfig();
  const runtime = await createRuntime(config);
  await prepareDatabase(config, runtime.logger);
  await runtime.createProjector().start();
  runtime.logger.info('projector running');
  return runtime;
});
