import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '@tokenvault/platform/testing';
import { allMigrations } from '@tokenvault/runtime';

/*
 * The bootstrap command as a newcomer runs it (a child process, as `npm run bootstrap` does), on a
 * database of its own: --help, an unknown option, a second run with the same name and owner, and
 * a bad variable, each answered in a line or two without a stack.
 */
const run = promisify(execFile);
const script = new URL('./bootstrap.ts', import.meta.url).pathname;

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

describe('bootstrap CLI', () => {
  let database: TestDatabase;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    database = await createTestDatabase(allMigrations);
    env = {
      ...process.env,
      NODE_ENV: 'test',
      DATABASE_URL: database.url,
      MASTER_KEY: randomBytes(32).toString('base64'),
      LOG_LEVEL: 'warn',
    };
  });
  afterAll(async () => database?.drop());

  const bootstrap = (args: string[], extraEnv: NodeJS.ProcessEnv = {}): Promise<Outcome> =>
    run(process.execPath, [script, ...args], { env: { ...env, ...extraEnv }, timeout: 60_000 }).then(
      ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
      (error: { code: number; stdout: string; stderr: string }) => ({
        code: error.code,
        stdout: error.stdout,
        stderr: error.stderr,
      }),
    );
  const noStack = (outcome: Outcome) => expect(outcome.stdout + outcome.stderr).not.toMatch(/\n\s+at /);

  it('--help prints the usage and every option, exit 0, touching nothing', async () => {
    const outcome = await bootstrap(['--help'], { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' });
    expect(outcome.code).toBe(0);
    expect(outcome.stdout).toMatch(
      /^usage: npm run --silent bootstrap -- --tenant-name NAME --owner-email EMAIL/,
    );
    for (const option of ['--tenant-name', '--owner-email', '--allow-duplicate', '--help'])
      expect(outcome.stdout).toContain(option);
    expect((await bootstrap(['-h'])).stdout).toBe(outcome.stdout);
  });

  it('an unknown option is named in one line with the usage, exit 2', async () => {
    const outcome = await bootstrap(['--tenant', 'Acme']);
    expect(outcome.code).toBe(2);
    expect(outcome.stderr.trim().split('\n')).toEqual([
      expect.stringContaining("'--tenant'"),
      expect.stringMatching(/^usage: /),
    ]);
    noStack(outcome);
  });

  it('refuses a second tenant with the same name and owner unless --allow-duplicate', async () => {
    const owner = `owner-${randomBytes(3).toString('hex')}@acme.test`;
    const first = await bootstrap(['--tenant-name', 'Acme', '--owner-email', owner]);
    expect(first.code).toBe(0);
    const created = JSON.parse(first.stdout) as { tenant_id: string };

    // Same owner, the address in other case: still the same person.
    const second = await bootstrap(['--tenant-name', 'Acme', '--owner-email', owner.toUpperCase()]);
    expect(second.code).toBe(3);
    expect(second.stdout).toBe('');
    expect(second.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(/^--tenant-name: a tenant named "Acme" owned by .* exists already/),
    ]);
    expect(second.stderr).toContain(created.tenant_id);
    expect(second.stderr).toContain('--allow-duplicate');

    // Another name for the same owner is no duplicate.
    expect((await bootstrap(['--tenant-name', 'Acme EU', '--owner-email', owner])).code).toBe(0);

    const allowed = await bootstrap(['--tenant-name', 'Acme', '--owner-email', owner, '--allow-duplicate']);
    expect(allowed.code).toBe(0);
    expect((JSON.parse(allowed.stdout) as { tenant_id: string }).tenant_id).not.toBe(created.tenant_id);
  });

  it('a bad variable is one line naming it, exit 2, no stack', async () => {
    const outcome = await bootstrap(['--tenant-name', 'Acme', '--owner-email', 'owner@acme.test'], {
      DATABASE_POOL_SIZE: 'many',
    });
    expect(outcome.code).toBe(2);
    expect(outcome.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^DATABASE_POOL_SIZE: /)]);
    noStack(outcome);
  });

  it('an unreachable database is one line naming DATABASE_URL and the fix, exit 2', async () => {
    const outcome = await bootstrap(['--tenant-name', 'Acme', '--owner-email', 'owner@acme.test'], {
      DATABASE_URL: 'postgres://postgres:secret-pw@127.0.0.1:1/tokenvault',
    });
    expect(outcome.code).toBe(2);
    expect(outcome.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(
        /^DATABASE_URL: cannot connect to 127\.0\.0\.1:1 \(connection refused.*start PostgreSQL/,
      ),
    ]);
    expect(outcome.stderr).not.toContain('secret-pw');
    noStack(outcome);
  });
});
