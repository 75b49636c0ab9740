// npm run rebuild-read-models: empties every read model and replays all events from the first.
// Safe while the service runs: the inline read models are rebuilt in one transaction (writes wait
// for it, reads see the old rows until it commits); the service's projector sees its reset
// checkpoint and replays too, and its read-your-writes waits follow the reset.
import { setTimeout as sleep } from 'node:timers/promises';
import { checkDependencies, createLogger, loadConfig } from '@tokenvault/platform';
import { comparePositions } from '@tokenvault/eventstore';
import { Checkpoint, rebuildReadModels } from '@tokenvault/cqrs';
import {
  exitOnEnvironmentProblem,
  openRuntimeBase,
  inlineProjections,
  prepareDatabase,
  projectorProjections,
  recordProjectionMode,
  readModelsProjectorName,
} from '@tokenvault/runtime';

// A bad variable or an unreachable database: one line each, exit 2, no stack.
const { config, logger } = await exitOnEnvironmentProblem(async () => {
  const config = loadConfig({ ...process.env, LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn' });
  await checkDependencies(config, ['postgres']);
  const logger = createLogger(config.LOG_LEVEL);
  await prepareDatabase(config, logger, { forRebuild: true });
  return { config, logger };
});
const runtime = await openRuntimeBase(config, logger);
try {
  await rebuildReadModels(runtime.ownerPool, readModelsProjectorName, {
    inline: inlineProjections(config),
    projector: projectorProjections(config),
  });
  // The read models are this mode's now: services of this mode may start.
  await recordProjectionMode(runtime.ownerPool, config.PROJECTIONS);
  const head = await runtime.store.headPosition();
  const projector = runtime.createProjector();
  await projector.start();
  const deadline = Date.now() + 60 * 60_000;
  // Polls the stored checkpoint: whichever projector replays (this one or a running service's).
  for (;;) {
    const checkpoint = await new Checkpoint(runtime.ownerPool, readModelsProjectorName).read();
    if (!head || (checkpoint && comparePositions(checkpoint, head) >= 0)) break;
    if (Date.now() > deadline) throw new Error('the rebuild did not finish within an hour');
    await sleep(200);
  }
  console.error(`read models rebuilt${head ? ` up to position ${head.prepare}` : ' (no events)'}`);
} finally {
  await runtime.close();
}
