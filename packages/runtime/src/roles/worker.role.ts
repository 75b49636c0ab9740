import { checkDependencies, createLogger, logDestinationFor, type Config } from '@tokenvault/platform';
import { signInMailWorker, startInvitationMail, startWebhookDisabledMail } from '@tokenvault/mail';
import { CodeRunWorker } from '@tokenvault/code-runs';
import { principalOfApplication } from '@tokenvault/tenancy';
import { startCardCvcRemoval } from '@tokenvault/tokens';
import { startWebhookDeliveries } from '@tokenvault/webhooks';
import { openRuntimeBase, prepareDatabase, type RuntimeBase } from '../runtime.ts';
import { startTokenIntentSweeperOf } from '../token-intent-sweeper.ts';
import { startTokenKeySweeperOf } from '../token-key-sweeper.ts';
import type { StartedRole } from './role.ts';

/**
 * The worker role: turns invitation events into BullMQ jobs and sends the invitation and sign-in
 * e-mails, runs reactors from their queue in sandbox child processes (their `svc` calls go to the
 * token routes in-process), removes cards' CVCs when their time comes, destroys expired tokens'
 * keys, and turns the event log into webhook deliveries and sends them (and tells a disabled webhook's
 * notify_email). Alone (services/worker) it opens
 * the shared runtime base (no Redis of its own, no producers' queues, no HTTP); the all-in-one
 * process gives it its runtime.
 */
export async function startWorker(config: Config, shared?: { runtime: RuntimeBase }): Promise<StartedRole> {
  const logger =
    shared?.runtime.logger ?? createLogger(config.LOG_LEVEL, 'tokenvault-worker', logDestinationFor(config));
  if (!shared) {
    await checkDependencies(config, ['postgres', 'redis', 'smtp'], { warn: (line) => logger.warn(line) });
    await prepareDatabase(config, logger);
  }
  const runtime = shared?.runtime ?? (await openRuntimeBase(config, logger));
  // Invitation e-mails: the enqueuer (event store → BullMQ) and the worker pool (→ SMTP).
  const invitationMail = await startInvitationMail({
    config,
    store: runtime.store,
    ownerPool: runtime.ownerPool,
    appPool: runtime.appPool,
    links: runtime.invitationLinks,
    clock: runtime.clock,
    logger,
  });
  // The sign-in e-mail senders (the gateway queues one job per sign-in link).
  const signInMail = signInMailWorker({ config, sessions: runtime.sessions, logger });
  signInMail.start();
  const reactors = await CodeRunWorker.start({
    config,
    vault: runtime.vault,
    routes: runtime.tokenRoutes,
    applicationPrincipal: (tenantId, applicationId) =>
      principalOfApplication(runtime.ownerPool, tenantId, applicationId),
    logger,
  });
  const tokenKeySweeper = startTokenKeySweeperOf(runtime);
  const tokenIntentSweeper = startTokenIntentSweeperOf(runtime);
  // Cards' CVCs, removed CARD_CVC_TTL_SECONDS after they were given.
  const cvcRemoval = await startCardCvcRemoval({
    config,
    store: runtime.store,
    ownerPool: runtime.ownerPool,
    deps: {
      store: runtime.store,
      vault: runtime.vault,
      clock: runtime.clock,
      freshKey: !config.EVENTSTORE_URL,
    },
    logger,
  });
  const webhookDeliveries = await startWebhookDeliveries({
    config,
    store: runtime.store,
    ownerPool: runtime.ownerPool,
    vault: runtime.vault,
    clock: runtime.clock,
    logger,
    onInvalidation: (listener) => runtime.consistency.onInvalidation(listener),
  });
  // The e-mail to a webhook's notify_email when its deliveries disabled it.
  const webhookDisabledMail = await startWebhookDisabledMail({
    config,
    store: runtime.store,
    ownerPool: runtime.ownerPool,
    logger,
  });
  logger.info(
    { concurrency: config.WORKER_CONCURRENCY, reactorConcurrency: config.REACTOR_CONCURRENCY },
    'worker running',
  );
  return {
    async close() {
      // Jobs in flight finish (or, past the forced-exit timeout, are released as stalled) before
      // the connections close.
      await invitationMail.stop();
      await signInMail.close();
      await reactors.close();
      await cvcRemoval.stop();
      await tokenKeySweeper.stop();
      await tokenIntentSweeper.stop();
      await webhookDeliveries.stop();
      await webhookDisabledMail.stop();
      if (!shared) await runtime.close();
    },
  };
}
