// Runs the bench with everything it started taken down at the end: on success, on an error, on
// Ctrl-C or SIGTERM, and after a watchdog, since the whole run must stay bounded even if
// something hangs.
import { dropCreatedDatabases } from './databases.ts';
import { killKafkaBroker, stopKafkaBroker } from './kafka-broker.ts';
import { log } from './log.ts';
import { killPostgresServer, stopPostgresServer } from './postgres-server.ts';
import { killAllChildren, stopAllChildren } from './processes.ts';

const overallTimeoutMs = 20 * 60_000;

let cleaning: Promise<void> | undefined;

/**
 * Stops every child, then drops every database this run created, then stops the bench's own
 * PostgreSQL cluster and removes its folder. Safe to call more than once.
 */
function cleanUp(): Promise<void> {
  cleaning ??= (async () => {
    await stopAllChildren();
    await stopKafkaBroker();
    await dropCreatedDatabases();
    await stopPostgresServer();
  })();
  return cleaning;
}

// Interrupted or stuck: clean up from here, since main may be blocked in a load run.
function abort(reason: string, exitCode: number): void {
  log(`${reason}: cleaning up`);
  setTimeout(() => process.exit(exitCode), 20_000).unref();
  void cleanUp().finally(() => process.exit(exitCode));
}

/** Runs `main`, then cleans up; an error is logged and sets exit code 1. */
export async function runBench(main: () => Promise<void>): Promise<void> {
  // Last resort: the bench process is exiting (even on an uncaught error), so take the children
  // along, and the broker and the PostgreSQL cluster, which are detached (they outlive a normal child).
  process.on('exit', () => {
    killAllChildren();
    killKafkaBroker();
    killPostgresServer();
  });
  process.once('SIGINT', () => abort('SIGINT', 130));
  process.once('SIGTERM', () => abort('SIGTERM', 143));
  setTimeout(() => abort(`still running after ${overallTimeoutMs / 1000} s`, 1), overallTimeoutMs).unref();

  try {
    try {
      await main();
    } finally {
      await cleanUp();
    }
  } catch (error) {
    log(error instanceof Error ? (error.stack ?? error.message) : String(error));
    process.exitCode = 1;
  }
}
