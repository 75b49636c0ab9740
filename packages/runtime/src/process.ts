import { ConfigError, DependencyUnavailableError } from '@tokenvault/platform';
import { EventStoreUnavailableError } from '@tokenvault/eventstore';
import type { StartedRole } from './roles/role.ts';
import { httpProcessLink, isHttpProcess } from './http-processes.ts';

/**
 * The lines that say what is wrong with the environment a process was started in (a bad variable,
 * a dependency that cannot be reached), one per variable; undefined for any other error (a bug,
 * which keeps its stack).
 */
export function environmentProblemLines(error: unknown): string[] | undefined {
  if (error instanceof ConfigError) return error.issues;
  if (error instanceof DependencyUnavailableError) return error.lines;
  if (error instanceof EventStoreUnavailableError) return [error.message];
  return undefined;
}

/**
 * Runs a command or a start-up, and when the environment is at fault prints its lines to stderr
 * and exits 2: no stack for a configuration problem. Other errors are thrown on.
 */
export async function exitOnEnvironmentProblem<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    const lines = environmentProblemLines(error);
    if (!lines) throw error;
    for (const line of lines) console.error(line);
    process.exit(2);
  }
}

/**
 * Starts a service and stops it gracefully on SIGINT or SIGTERM (an HTTP process also when its
 * primary asks or is gone): in-flight requests and projection batches finish, connections close.
 * A bad configuration or an unreachable dependency exits 2 with one line per variable.
 */
export async function runUntilSignalled(start: () => Promise<StartedRole>): Promise<void> {
  // Before the start: a stop the primary sends while this HTTP process starts is kept, not lost.
  const primary = isHttpProcess() ? httpProcessLink() : undefined;
  const service = await exitOnEnvironmentProblem(start);
  let stopping = false;
  const stop = (why: string) => {
    if (stopping) return;
    stopping = true;
    console.error(`${why}; shutting down`);
    const forced = setTimeout(() => process.exit(1), 15_000);
    forced.unref();
    service.close().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(error);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => stop('received SIGINT'));
  process.on('SIGTERM', () => stop('received SIGTERM'));
  // An HTTP process stops when the primary stops (it drains them all) or is gone.
  primary?.onStop((reason) => stop(`HTTP process stopping: ${reason}`));
}
