// npm run rebuild-read-models: empties every read model and replays all events from the first.
// Safe while the service runs: its projector sees the reset checkpoint and replays too.
import { createLogger, loadConfig } from '@tokenvault/platform';
import { resetReadModels } from '@tokenvault/cqrs';
import { allProjections, createRuntime, prepareDatabase, readModelsProjectorName } from '@tokenvault/runtime';

const config = loadConfig({ ...process.env, LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn' });
const logger = createLogger(config.LOG_LEVEL);
await prepareDatabase(config, logger);
const runtime = await createRuntime(config, logger);
try {
  await resetReadModels(runtime.ownerPool, readModelsProjectorName, allProjections);
  const projector = runtime.createProjector();
  await projector.start();
  const head = await runtime.store.headPosition();
  if (head && !(await runtime.consistency.waitFor(head, 60 * 60_000))) {
    throw new Error('the rebuild did not finish within an hour');
  }
  console.error(`read models rebuilt${head ? ` up to position ${head.prepare}` : ' (no events)'}`);
} finally {
  await runtime.close();
}
