import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TokenvaultClient } from '@tokenvault/sdk';
import { startStack, type TestStack } from './support/stack.ts';

const run = promisify(execFile);
const root = new URL('..', import.meta.url).pathname;

describe('bootstrap CLI', () => {
  let stack: TestStack;

  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => stack?.stop());

  const bootstrap = (...args: string[]) =>
    run(process.execPath, ['services/admin-cli/src/bootstrap.ts', ...args], {
      cwd: root,
      env: {
        ...process.env,
        DATABASE_URL: stack.database.url,
        MASTER_KEY: stack.config.MASTER_KEY,
        LOG_LEVEL: 'warn',
      },
    });

  it('prints one line of JSON with a management key that holds every permission', async () => {
    const { stdout } = await bootstrap(
      '--tenant-name',
      'Acme',
      '--owner-email',
      `owner-${randomBytes(3).toString('hex')}@acme.test`,
    );
    const lines = stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const output = JSON.parse(lines[0]!) as Record<string, string>;
    expect(Object.keys(output).sort()).toEqual(['api_key', 'application_id', 'owner_user_id', 'tenant_id']);
    const client = new TokenvaultClient(stack.url, output.api_key);
    const token = await client.tokens.create({
      type: 'bank',
      data: { routing_number: '021000021', account_number: '000123456789' },
    });
    expect(await client.tokens.get(token.id)).toMatchObject({
      tenant_id: output.tenant_id,
      created_by: output.application_id,
    });
    const application = await client.applications.get(output.application_id!);
    expect(application).toMatchObject({ type: 'management', name: 'Management (bootstrap)' });
    expect(application.permissions).toEqual(
      expect.arrayContaining(['token:create', 'tenant:delete', 'reactor:create', 'log:read']),
    );
  });

  it('refuses bad arguments with a usage line and exit code 2', async () => {
    const failure = await bootstrap('--tenant-name', 'Acme', '--owner-email', 'not an address').then(
      () => undefined,
      (error: { code: number; stderr: string }) => error,
    );
    expect(failure?.code).toBe(2);
    expect(failure?.stderr).toContain('--owner-email');
  });
});
