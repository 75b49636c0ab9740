// The background worker alone: turns invitation events into BullMQ jobs and sends the e-mails,
// and runs reactors from their BullMQ queue in sandbox child processes.
import { createLogger, loadConfig } from '@tokenvault/platform';
import {
  createRuntime,
  prepareDatabase,
  runUntilSignalled,
  startInvitationMailOf,
  startReactorWorkerOf,
  startSignInMailOf,
  startTokenKeySweeperOf,
} from '@tokenvault/runtime';

await runUntilSignalled(async () => {
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL, 'tokenvault-worker');
  await prepareDatabase(config, logger);
  const runtime = await createRuntime(config, logger);
  const mail = await startInvitationMailOf(runtime);
  const signInMail = startSignInMailOf(runtime);
  const reactors = await startReactorWorkerOf(runtime);
  const tokenKeySweeper = startTokenKeySweeperOf(runtime);
  logger.info(
    { concurrency: config.WORKER_CONCURRENCY, reactorConcurrency: config.REACTOR_CONCURRENCY },
    'worker running',
  );
  return {
    async close() {
      // Active jobs finish before the connections close.
      await mail.stop();
      await signInMail.stop();
      await reactors.close();
      await tokenKeySweeper.stop();
      await runtime.close();
    },
  };
});
