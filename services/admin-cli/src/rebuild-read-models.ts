// npm run rebuild-read-models: empties every read model and replays all events from the first.
// Safe while the service runs: its projector sees the reset checkpoint and replays too.
import { loadConfig } from '@tokenvault/platform';
import { resetReadModels } from '@tokenvault/cqrs';
import { allProjections, createRuntime, prepareDatabase, readModelsProjectorName } from '@tokenvault/runtime';

const config = loadConfig({ ...process.env, LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn' });
const runtime = await createRuntime(config);
try {
  await prepareDatabase(config, runtime.logger);
  await resetReadModels(runtime.ownerPool, readModelsProjectorName, allProjections);
  const projector = runtime.createProjector();
  await projector.start();
  const last = (await runtime.store.readAll({ limit: 1_000_000_000 })).at(-1);
  if (last) await runtime.consistency.waitFor(last.position, 10 * 60_000);
  console.error(`read models rebuilt${last ? ` up to position ${last.position.prepare}` : ' (no events)'}`);
} finally {
  await runtime.close();
}
