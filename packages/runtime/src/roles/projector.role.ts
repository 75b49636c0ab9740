import { checkDependencies, createLogger, logDestinationFor, type Config } from '@tokenvault/platform';
import { connectEventStore } from '../event-log.ts';
import { prepareDatabase } from '../runtime.ts';
import { readModelsProjector, treeHeadSignerFor } from '../subscribers.ts';
import type { StartedRole } from './role.ts';

/**
 * The projector role: applies the events to the read models (only the trailing ones with
 * PROJECTIONS=inline) and signs the event log's tree heads, on an event store connection of its
 * own. The same wiring runs as a process (services/projector) and on a thread of the all-in-one
 * process (startProjectorThread), which has prepared the database already.
 */
export async function startProjector(
  config: Config,
  options: { databasePrepared?: boolean; logDestination?: NodeJS.WritableStream } = {},
): Promise<StartedRole> {
  const logger = createLogger(
    config.LOG_LEVEL,
    'tokenvault-projector',
    options.logDestination ?? logDestinationFor(config),
  );
  if (!options.databasePrepared) {
    await checkDependencies(config, ['postgres']);
    await prepareDatabase(config, logger);
  }
  // Read models are rebuilt from the events, and the checkpoint commits with them: a commit lost
  // in a crash is replayed, so the projector need not wait for its WAL flush.
  const connection = await connectEventStore(config, logger, {
    applicationName: 'tokenvault-projector',
    // The projector's, the tree-head signer's (tree heads commit with their checkpoint too) and a reader.
    max: 3,
    settings: { synchronous_commit: 'off' },
  });
  const projector = readModelsProjector(config, connection, logger);
  // The tree heads of the event log: one more processor, in the process that runs processors.
  const treeHeadSigner = treeHeadSignerFor(config, connection, logger);
  const close = async () => {
    await projector.stop();
    await treeHeadSigner?.stop();
    await connection.close();
  };
  try {
    await projector.start();
    await treeHeadSigner?.start();
    await projector.ready(60_000);
  } catch (error) {
    await close().catch(() => {});
    throw error;
  }
  logger.info({ logTreeHeads: config.LOG_TREE_HEADS }, 'projector running');
  return { close };
}
