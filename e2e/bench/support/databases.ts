// The bench's databases on its PostgreSQL server (postgres-server.ts): created fresh for the run;
// on the server of BENCH_POSTGRES_URL they are dropped by lifecycle.ts at the end (the bench's own
// cluster goes as a whole).
import pg from 'pg';
import { log } from './log.ts';
import { ownsPostgresServer, postgresServerUrl } from './postgres-server.ts';

const createdDatabases: string[] = [];

export function databaseUrl(name: string): string {
  const url = new URL(postgresServerUrl());
  url.pathname = `/${name}`;
  return url.toString();
}

async function withAdmin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({
    connectionString: databaseUrl('postgres'),
    application_name: 'bench-admin',
  });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** Creates a database and remembers it for dropCreatedDatabases. */
export async function createDatabase(name: string): Promise<void> {
  await withAdmin((client) => client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`));
  createdDatabases.push(name);
}

async function dropDatabase(name: string): Promise<void> {
  // FORCE: a child killed mid-query may leave a backend behind for a moment.
  await withAdmin((client) =>
    client.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`),
  );
}

export async function dropCreatedDatabases(): Promise<void> {
  if (ownsPostgresServer()) return;
  for (const name of createdDatabases) {
    await dropDatabase(name).catch((error: unknown) => log(`could not drop ${name}: ${String(error)}`));
  }
}
