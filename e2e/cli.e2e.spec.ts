import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { useStack } from './support/stack.ts';

// `npm run tv` (services/cli) against a running stack, as an operator's terminal or script runs it:
// JSON on stdout, one line on stderr and a non-zero exit code when something is refused.

const cliEntry = fileURLToPath(new URL('../services/cli/src/main.ts', import.meta.url));

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The CLI in a child process (asynchronously: the stack answering it runs in this process). */
function tv(args: string[], env: Record<string, string | undefined>): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cliEntry, ...args], {
      env: { PATH: process.env.PATH, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('npm run tv', () => {
  const env = useStack({ LOG_LEVEL: 'warn' });
  const as = (key = env.tenant.apiKey) => ({ TV_BASE_URL: env.stack.url, TV_API_KEY: key });
  const ok = async (args: string[], key?: string) => {
    const run = await tv(args, as(key));
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    return run.stdout ? (JSON.parse(run.stdout) as Record<string, unknown>) : undefined;
  };

  it('creates, reads, lists and deletes tokens', async () => {
    const created = await ok([
      'tokens',
      'create',
      '--type',
      'card',
      '--data',
      '{"number":"4242424242424242","expiration_month":12,"expiration_year":2030}',
      '--metadata',
      '{"customer":"cli-1"}',
    ]);
    expect(created).toMatchObject({ type: 'card', metadata: { customer: 'cli-1' } });
    expect(created).not.toHaveProperty('data');
    const id = created!.id as string;

    expect(await ok(['tokens', 'get', id])).toMatchObject({ id, data: { number: '4242424242424242' } });

    const listed = await ok(['tokens', 'list', '--metadata', 'customer=cli-1']);
    expect((listed!.data as { id: string; data?: unknown }[]).map((token) => token.id)).toEqual([id]);
    expect((listed!.data as { data?: unknown }[])[0]).not.toHaveProperty('data');
    const withData = await ok(['tokens', 'list', '--type', 'card', '--with-data']);
    expect((withData!.data as { data?: unknown }[])[0]).toHaveProperty('data');

    expect(await ok(['tokens', 'delete', id])).toBeUndefined();
    const gone = await tv(['tokens', 'get', id], as());
    expect(gone.code).toBe(1);
    expect(gone.stderr).toMatch(/^error: 404 /);
  });

  it('creates and reads applications, and rotates their keys', async () => {
    const application = await ok([
      'applications',
      'create',
      '--name',
      'CLI reader',
      '--type',
      'private',
      '--permissions',
      'token:read',
    ]);
    expect(application).toMatchObject({ name: 'CLI reader', type: 'private', permissions: ['token:read'] });
    const applicationId = application!.id as string;
    const firstKey = application!.key as string;
    expect(await ok(['applications', 'get', applicationId])).toMatchObject({ id: applicationId });
    const listed = await ok(['applications', 'list']);
    expect((listed!.data as { id: string }[]).map((item) => item.id)).toContain(applicationId);

    const second = await ok(['keys', 'create', applicationId, '--expires-at', '2031-01-01T00:00:00Z']);
    expect(second).toMatchObject({ application_id: applicationId, expires_at: '2031-01-01T00:00:00.000Z' });
    const keys = (await ok(['keys', 'list', applicationId])) as unknown as { id: string }[];
    expect(keys.map((key) => key.id)).toEqual([applicationId, second!.id]);

    expect(await ok(['keys', 'delete', applicationId, applicationId])).toBeUndefined();
    const refused = await tv(['tokens', 'list'], as(firstKey));
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^error: 401 /);
    expect(await ok(['tokens', 'list'], second!.key as string)).toHaveProperty('data');
  });

  it('says what the API refused in one line, with the field and the fix, and exits 1', async () => {
    const refused = await tv(
      [
        'tokens',
        'create',
        '--type',
        'card',
        '--data',
        '{"number":"4242424242424241","expiration_month":12,"expiration_year":2030}',
      ],
      as(),
    );
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);
    expect(refused.stderr).toMatch(/^error: 400 .*\(body\.data\.number: .*Luhn/);

    const escalation = await tv(
      [
        'applications',
        'create',
        '--name',
        'Escalation',
        '--type',
        'management',
        '--permissions',
        'token:read',
      ],
      as(
        (
          (await ok([
            'applications',
            'create',
            '--name',
            'Narrow',
            '--type',
            'private',
            '--permissions',
            'application:create',
          ])) as { key: string }
        ).key,
      ),
    );
    expect(escalation.code).toBe(1);
    expect(escalation.stderr).toMatch(/^error: 403 .*body\.(type|permissions)/);
  });

  it('explains its usage at each level, and refuses a missing service or key with exit 2', async () => {
    const top = await tv(['--help'], {});
    expect(top.code).toBe(0);
    expect(top.stdout).toMatch(/tokens +create \| get \| list \| delete/);
    expect(top.stdout).toMatch(/keys +create \| list \| delete/);
    const resource = await tv(['keys', '--help'], {});
    expect(resource.code).toBe(0);
    expect(resource.stdout).toContain('keys delete <application_id> <key_id>');
    const command = await tv(['tokens', 'create', '--help'], {});
    expect(command.code).toBe(0);
    expect(command.stdout).toContain('--data JSON');

    const noBase = await tv(['tokens', 'list'], { TV_API_KEY: 'tv_mgt_x' });
    expect(noBase).toMatchObject({ code: 2, stdout: '' });
    expect(noBase.stderr).toContain('TV_BASE_URL');
    const noKey = await tv(['tokens', 'list'], { TV_BASE_URL: env.stack.url });
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain('TV_API_KEY');
    const badJson = await tv(['tokens', 'create', '--data', '{nope'], as());
    expect(badJson.code).toBe(2);
    expect(badJson.stderr).toContain('--data must be JSON');
    const unknown = await tv(['tokens', 'explode'], as());
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('one of create, get, list, delete');
  });
});
