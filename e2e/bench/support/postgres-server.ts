// The bench's PostgreSQL server: by default a cluster of its own, `initdb` into a temporary folder
// with the machine's server binaries, on a free port, with pg_stat_statements loaded. Its statement
// counts and its processes' CPU time are then the bench's alone, and the shared server is
// untouched. BENCH_POSTGRES_URL names another server to use instead (no cluster is started; the
// per-statement figures need pg_stat_statements loaded there, and PostgreSQL's CPU needs it local).
// The cluster is stopped and its folder removed by lifecycle.ts, also on failure or Ctrl-C.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { chownSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { log } from './log.ts';
import { freePort } from './processes.ts';
import { settings } from './settings.ts';

// Those of the machine's shared server that change what is measured; fsync and synchronous_commit
// stay at PostgreSQL's defaults (on), as there: a commit is as durable as in production.
const serverSettings = {
  max_connections: '100',
  shared_buffers: '128MB',
  max_wal_size: '1GB',
  min_wal_size: '80MB',
  autovacuum: 'off',
  TimeZone: 'Etc/UTC',
  shared_preload_libraries: 'pg_stat_statements',
  // Statements run inside functions and triggers too, each under its own text.
  'pg_stat_statements.track': 'all',
  'pg_stat_statements.max': '10000',
};

interface OwnCluster {
  folder: string;
  postmaster: ChildProcess;
  /** The last few KB of its log, for error reports. */
  output(): string;
}

let cluster: OwnCluster | undefined;
let serverUrl: string | undefined;

/** The server's URL (its `postgres` database); startPostgresServer must have run. */
export function postgresServerUrl(): string {
  if (!serverUrl) throw new Error('the bench PostgreSQL server is not started');
  return serverUrl;
}

/** True when the bench runs its own cluster (its databases go with its folder). */
export function ownsPostgresServer(): boolean {
  return cluster !== undefined;
}

export async function startPostgresServer(): Promise<string> {
  if (settings.postgresUrl !== undefined) {
    serverUrl = settings.postgresUrl;
    return serverUrl;
  }
  const binDir = serverBinaries();
  const folder = mkdtempSync(path.join(os.tmpdir(), 'tokenvault-bench-pg-'));
  // initdb and postgres refuse to run as root: then they run as the postgres OS user, who owns the folder.
  const runAs = process.getuid?.() === 0 ? osUser('postgres') : undefined;
  if (runAs) chownSync(folder, runAs.uid, runAs.gid);
  const command = (binary: string, args: string[]): [string, string[]] =>
    runAs
      ? [
          'setpriv',
          [
            '--reuid',
            String(runAs.uid),
            '--regid',
            String(runAs.gid),
            '--init-groups',
            '--',
            binary,
            ...args,
          ],
        ]
      : [binary, args];
  const dataDir = path.join(folder, 'data');
  log(`initdb into ${dataDir}`);
  try {
    // --no-sync only skips flushing initdb's own files: the server below runs with fsync on.
    execFileSync(
      ...command(path.join(binDir, 'initdb'), [
        '-D',
        dataDir,
        '-U',
        'postgres',
        '--auth=trust',
        '--encoding=UTF8',
        '--locale=C.UTF-8',
        '--no-sync',
      ]),
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
  } catch (error) {
    rmSync(folder, { recursive: true, force: true });
    throw error;
  }
  const port = await freePort();
  const settingArgs = Object.entries(serverSettings).flatMap(([name, value]) => ['-c', `${name}=${value}`]);
  // Detached: a Ctrl-C on the terminal reaches the bench, which stops the service before the database.
  const postmaster = spawn(
    ...command(path.join(binDir, 'postgres'), [
      '-D',
      dataDir,
      '-p',
      String(port),
      '-k',
      folder,
      '-c',
      'listen_addresses=127.0.0.1',
      ...settingArgs,
    ]),
    { stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  );
  let tail = '';
  const keep = (chunk: Buffer) => (tail = (tail + chunk.toString('utf8')).slice(-4_000));
  postmaster.stdout?.on('data', keep);
  postmaster.stderr?.on('data', keep);
  cluster = { folder, postmaster, output: () => tail };
  serverUrl = `postgres://postgres@127.0.0.1:${port}/postgres`;
  await waitUntilAccepting(serverUrl, cluster);
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements').finally(() => client.end());
  log(`the bench's PostgreSQL cluster listens on 127.0.0.1:${port} (postmaster ${postmaster.pid})`);
  return serverUrl;
}

/** Fast shutdown (every session ended, a checkpoint written), then the folder is removed. */
export async function stopPostgresServer(): Promise<void> {
  const stopping = cluster;
  if (!stopping) return;
  cluster = undefined;
  const { postmaster } = stopping;
  if (postmaster.exitCode === null && postmaster.signalCode === null) {
    const exit = once(postmaster, 'exit');
    postmaster.kill('SIGINT');
    const timer = setTimeout(() => postmaster.kill('SIGQUIT'), 20_000);
    await exit;
    clearTimeout(timer);
  }
  await rm(stopping.folder, { recursive: true, force: true });
}

/** Synchronous, for the process's 'exit' handler: immediate shutdown, then the folder, as far as it goes. */
export function killPostgresServer(): void {
  if (!cluster) return;
  cluster.postmaster.kill('SIGQUIT');
  rmSync(cluster.folder, { recursive: true, force: true, maxRetries: 3 });
  cluster = undefined;
}

/** The machine's server binaries: pg_config's, else the newest /usr/lib/postgresql/<version>/bin. */
function serverBinaries(): string {
  try {
    return execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim();
  } catch {
    const versions = readdirSync('/usr/lib/postgresql')
      .filter((entry) => /^\d+$/.test(entry))
      .sort((a, b) => Number(b) - Number(a));
    if (versions.length === 0)
      throw new Error('no PostgreSQL server binaries (pg_config or /usr/lib/postgresql/<version>/bin)');
    return `/usr/lib/postgresql/${versions[0]}/bin`;
  }
}

function osUser(name: string): { uid: number; gid: number } {
  const id = (flag: string) => Number(execFileSync('id', [flag, name], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

async function waitUntilAccepting(url: string, starting: OwnCluster): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (starting.postmaster.exitCode !== null || starting.postmaster.signalCode !== null)
      throw new Error(`the bench's PostgreSQL exited at start:\n${starting.output()}`);
    const client = new pg.Client({ connectionString: url });
    try {
      await client.connect();
      await client.end();
      return;
    } catch (error) {
      await client.end().catch(() => {});
      if (Date.now() > deadline)
        throw new Error(
          `the bench's PostgreSQL is not accepting connections: ${String(error)}\n${starting.output()}`,
        );
    }
    await sleep(100);
  }
}

/**
 * The postmaster of the server behind `pool` when it runs on this machine: the parent of the
 * backend serving the query, if /proc shows that process as a PostgreSQL backend.
 */
export async function localPostmasterPid(pool: pg.Pool): Promise<number | undefined> {
  if (cluster) return cluster.postmaster.pid;
  const { rows } = await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  const backend = rows[0]?.pid;
  try {
    const title = await readFile(`/proc/${backend}/cmdline`, 'utf8');
    if (!title.startsWith('postgres: ')) return undefined;
    const stat = await readFile(`/proc/${backend}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}
