import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closedPort, createTestDatabase, type TestDatabase } from '@tokenvault/platform/testing';
import { allMigrations } from '@tokenvault/runtime';

/*
 * EVENTSTORE_URL at start, as `npm start` runs the service (a child process): a KurrentDB that
 * cannot be reached or a connection string that cannot be used stops it within 15 s with one line
 * naming EVENTSTORE_URL and the reason; PROJECTIONS=inline with it refuses to start. No KurrentDB
 * server is needed: each case fails before one would be used.
 */
const root = fileURLToPath(new URL('..', import.meta.url));
const startLimitMs = 15_000;

interface Exit {
  code: number | null;
  ms: number;
  stderr: string;
  stdout: string;
}

function startService(env: NodeJS.ProcessEnv): Promise<Exit> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['services/all-in-one/src/main.ts'], { cwd: root, env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    // Past the limit it has hung: killed, and the test fails on the time.
    const timer = setTimeout(() => child.kill('SIGKILL'), startLimitMs + 5_000);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, ms: Date.now() - started, stderr, stdout });
    });
  });
}

const linesNaming = (text: string, name: string) => text.split('\n').filter((line) => line.includes(name));

describe('EVENTSTORE_URL at start', () => {
  let database: TestDatabase;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    database = await createTestDatabase(allMigrations);
    const {
      KAFKA_BROKERS: _kafka,
      PROJECTIONS: _projections,
      EVENTSTORE_URL: _url,
      ...inherited
    } = process.env;
    env = {
      ...inherited,
      NODE_ENV: 'test',
      DATABASE_URL: database.url,
      PORT: '0',
      HOST: '127.0.0.1',
      MASTER_KEY: randomBytes(32).toString('base64'),
      LOG_LEVEL: 'info',
      QUEUE_PREFIX: `tv-test-${database.name}`,
    };
  });

  afterAll(async () => {
    await database?.drop();
  });

  it('stops within 15 s with one line naming EVENTSTORE_URL when the server cannot be reached', async () => {
    const url = `kurrentdb://127.0.0.1:${await closedPort()}?tls=false`;
    const exit = await startService({ ...env, EVENTSTORE_URL: url });
    expect(exit.ms).toBeLessThan(startLimitMs);
    expect(exit.code).not.toBe(0);
    expect(exit.code).not.toBeNull();
    const lines = linesNaming(exit.stderr, 'EVENTSTORE_URL');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^EVENTSTORE_URL: cannot read from the server: no connection to the server/);
    expect(exit.stdout + exit.stderr).not.toContain('tokenvault is listening');
  });

  it('stops with one line naming EVENTSTORE_URL and the reason when the connection string is unusable', async () => {
    const exit = await startService({ ...env, EVENTSTORE_URL: 'kurrentdb://127.0.0.1:2113?tls=maybe' });
    expect(exit.ms).toBeLessThan(startLimitMs);
    expect(exit.code).toBe(2);
    expect(linesNaming(exit.stderr, 'EVENTSTORE_URL')).toEqual([
      'EVENTSTORE_URL: tls must be true or false, got maybe',
    ]);
  });

  it('refuses PROJECTIONS=inline with EVENTSTORE_URL, naming both', async () => {
    const exit = await startService({
      ...env,
      EVENTSTORE_URL: `kurrentdb://127.0.0.1:${await closedPort()}?tls=false`,
      PROJECTIONS: 'inline',
    });
    expect(exit.code).toBe(2);
    const lines = linesNaming(exit.stderr, 'EVENTSTORE_URL');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/PROJECTIONS: inline .*EVENTSTORE_URL/);
  });
});
