import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closedPort, createTestDatabase, type TestDatabase } from '@tokenvault/platform/testing';
import { allMigrations } from '@tokenvault/runtime';
import { startStack, type TestStack } from './support/stack.ts';

/*
 * The start of `npm start` (the all-in-one service as a child process) as a newcomer meets it:
 * each dependency that cannot be reached is one line naming its variable, the address tried
 * (never a password) and the fix, with exit code 2, no stack and no "listening"; SMTP alone only
 * warns (e-mails wait in their queue). Logs are human lines in development, JSON in production.
 */
const root = fileURLToPath(new URL('..', import.meta.url));
const limitMs = 20_000;
const password = 'hunter2-never-printed';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the service until it exits, or until `until` matches its output (then stops it with
 * SIGTERM): its exit code and what it wrote.
 */
function runService(env: NodeJS.ProcessEnv, until?: RegExp): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['services/all-in-one/src/main.ts'], { cwd: root, env });
    let stdout = '';
    let stderr = '';
    const seen = () => {
      if (until?.test(stdout + stderr) && child.exitCode === null) child.kill('SIGTERM');
    };
    child.stdout.on('data', (chunk: Buffer) => ((stdout += chunk.toString()), seen()));
    child.stderr.on('data', (chunk: Buffer) => ((stderr += chunk.toString()), seen()));
    const timer = setTimeout(() => child.kill('SIGKILL'), limitMs);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const linesNaming = (text: string, name: string) => text.split('\n').filter((line) => line.includes(name));

describe('start-up that names the fix', () => {
  let database: TestDatabase;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    database = await createTestDatabase(allMigrations);
    const {
      KAFKA_BROKERS: _kafka,
      EVENTSTORE_URL: _eventstore,
      SMTP_URL: _smtp,
      LOG_FORMAT: _format,
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

  it.each([
    {
      variable: 'DATABASE_URL',
      value: (port: number) => `postgres://postgres:${password}@127.0.0.1:${port}/tokenvault`,
      fix: 'start PostgreSQL there, or set DATABASE_URL=',
    },
    {
      variable: 'REDIS_URL',
      value: (port: number) => `redis://:${password}@127.0.0.1:${port}`,
      fix: 'start Redis there (redis-server), or set REDIS_URL=',
    },
    {
      variable: 'KAFKA_BROKERS',
      value: (port: number) => `127.0.0.1:${port}`,
      fix: 'start a broker there (npm run kafka:start), set KAFKA_BROKERS=',
    },
  ])(
    'with $variable on a closed port: one line naming it, the address and the fix; exit 2',
    async ({ variable, value, fix }) => {
      const port = await closedPort();
      const run = await runService({ ...env, [variable]: value(port) });
      expect(run.code).toBe(2);
      const lines = linesNaming(run.stdout + run.stderr, variable);
      expect(lines).toEqual([
        `${variable}: cannot connect to 127.0.0.1:${port} (connection refused, nothing listens there); ${lines[0]?.split('; ').slice(1).join('; ')}`,
      ]);
      expect(lines[0]).toContain(fix);
      expect(run.stderr.trim().split('\n')).toEqual(lines);
      const output = run.stdout + run.stderr;
      expect(output).not.toContain(password);
      expect(output).not.toMatch(/\n\s+at /);
      expect(output).not.toContain('listening');
    },
  );

  it('with several unreachable: one line each, in one run', async () => {
    const run = await runService({
      ...env,
      DATABASE_URL: `postgres://postgres@127.0.0.1:${await closedPort()}/tokenvault`,
      REDIS_URL: `redis://127.0.0.1:${await closedPort()}`,
    });
    expect(run.code).toBe(2);
    expect(
      run.stderr
        .trim()
        .split('\n')
        .map((line) => line.split(':')[0]),
    ).toEqual(['DATABASE_URL', 'REDIS_URL']);
  });

  it('a bad variable is one line per variable, without a stack', async () => {
    const run = await runService({ ...env, PORT: 'eighty', LOG_LEVEL: 'loud' });
    expect(run.code).toBe(2);
    const lines = run.stderr.trim().split('\n');
    expect(lines.map((line) => line.split(':')[0]).sort()).toEqual(['LOG_LEVEL', 'PORT']);
    expect(linesNaming(run.stderr, 'LOG_LEVEL')[0]).toContain('"info"');
  });

  it('with SMTP_URL on a closed port: one warning naming it, and the service starts', async () => {
    const port = await closedPort();
    const run = await runService(
      { ...env, SMTP_URL: `smtp://mailer:${password}@127.0.0.1:${port}` },
      /tokenvault is listening/,
    );
    const warnings = linesNaming(run.stdout, 'SMTP_URL');
    expect(warnings).toHaveLength(1);
    expect(JSON.parse(warnings[0]!)).toMatchObject({
      level: 40,
      msg: expect.stringMatching(
        new RegExp(
          `^SMTP_URL: cannot connect to 127\\.0\\.0\\.1:${port} \\(connection refused.*\\); e-mails wait`,
        ),
      ),
    });
    expect(run.stdout).toContain('tokenvault is listening');
    expect(run.stdout + run.stderr).not.toContain(password);
  });

  it('logs human lines when NODE_ENV is development (pino-pretty)', async () => {
    const run = await runService({ ...env, NODE_ENV: 'development' }, /tokenvault is listening/);
    const listening = linesNaming(run.stdout, 'tokenvault is listening');
    expect(listening).toHaveLength(1);
    expect(listening[0]).toMatch(/INFO.*\(tokenvault\): tokenvault is listening/);
    expect(() => JSON.parse(listening[0]!) as unknown).toThrow();
  });

  it('logs one JSON object a line in production', async () => {
    const run = await runService({ ...env, NODE_ENV: 'production' }, /tokenvault is listening/);
    const listening = linesNaming(run.stdout, 'tokenvault is listening');
    expect(listening).toHaveLength(1);
    expect(JSON.parse(listening[0]!)).toMatchObject({
      level: 30,
      name: 'tokenvault',
      msg: 'tokenvault is listening',
    });
  });
});

describe('readiness after the start', () => {
  let stack: TestStack;

  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => stack?.stop());

  it('answers 503 naming REDIS_URL once Redis stops answering the service', async () => {
    expect(await stack.client.request('GET', '/readyz')).toMatchObject({ status: 200 });
    // The service's own Redis connection, closed for good (no reconnection): Redis is gone for it.
    stack.service.runtime.redis.disconnect();
    expect(await stack.client.request('GET', '/readyz')).toMatchObject({
      status: 503,
      body: {
        status: 'not ready',
        checks: { postgres: 'ok', redis: 'unavailable' },
        problems: ['REDIS_URL: Redis does not answer'],
      },
    });
  });
});
