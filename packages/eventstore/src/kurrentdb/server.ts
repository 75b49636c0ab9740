import { execFileSync } from 'node:child_process';

/**
 * Where the KurrentDB suite finds a server: EVENTSTORE_URL, or a KurrentDB image a local Docker
 * engine already has (started with @testcontainers/kurrentdb). Nothing is pulled: these machines
 * cannot fetch one. `reason` says why there is none.
 */
export type KurrentDBServer =
  { kind: 'url'; url: string } | { kind: 'image'; image: string } | { kind: 'none'; reason: string };

/** Repositories of KurrentDB (and EventStoreDB, the same server) images. */
const imagePattern = /(^|\/)(kurrentdb|eventstore\/eventstore)$/;

export function findKurrentDBServer(env: NodeJS.ProcessEnv = process.env): KurrentDBServer {
  if (env.EVENTSTORE_URL) return { kind: 'url', url: env.EVENTSTORE_URL };
  let listing: string;
  try {
    listing = execFileSync('docker', ['image', 'ls', '--format', '{{.Repository}}:{{.Tag}}'], {
      encoding: 'utf8',
      timeout: 10_000,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
  } catch {
    return { kind: 'none', reason: 'EVENTSTORE_URL is unset and no Docker engine answers' };
  }
  const image = listing
    .split('\n')
    .map((line) => line.trim())
    .find((line) => imagePattern.test(line.replace(/:[^:/]*$/, '')) && !line.endsWith(':<none>'));
  if (image) return { kind: 'image', image };
  return {
    kind: 'none',
    reason:
      'EVENTSTORE_URL is unset and the Docker engine has no KurrentDB image (docker.kurrent.io/kurrent-latest/kurrentdb)',
  };
}
