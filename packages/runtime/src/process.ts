import { ConfigError } from '@tokenvault/platform';
import { EventStoreUnavailableError } from '@tokenvault/eventstore';
import type { StartedRole } from './roles/role.ts';

/**
 * Starts a service and stops it gracefully on SIGINT or SIGTERM: in-flight requests and
 * projection batches finish, connections close. A bad configuration exits 2 with its reasons.
 */
export async function runUntilSignalled(start: () => Promise<StartedRole>): Promise<void> {
  let service: StartedRole;
  try {
    service = await start();
  } catch (error) {
    if (error instanceof ConfigError || error instanceof EventStoreUnavailableError) {
      console.error(error.message);
      process.exit(2);
    }
    throw error;
  }
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.error(`received ${signal}; shutting down`);
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
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}
