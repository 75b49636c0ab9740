// The projector alone: applies every event to the PostgreSQL read models, and seals the event log.
import { createLogger, loadConfig } from '@tokenvault/platform';
import { createRuntime, logSealerFor, prepareDatabase, runUntilSignalled } from '@tokenvault/runtime';

await runUntilSignalled(async () => {
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL);
  await prepareDatabase(config, logger);
  const runtime = await createRuntime(config, logger);
  await runtime.createProjector().start();
  // The seals of the event log: one more processor, in the process that runs processors.
  const sealer = logSealerFor(config, { store: runtime.store, pool: runtime.ownerPool }, runtime.logger);
  await sealer?.start();
  runtime.logger.info({ logSealing: config.LOG_SEALING }, 'projector running');
  return {
    async close() {
      await sealer?.stop();
      await runtime.close();
    },
  };
});
