import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TokenvaultClient } from '@tokenvault/sdk';
import { composeFiles, root } from '../../scripts/compose.mjs';
import { bootstrapTenant, portsFile, startComposeStack, waitFor, type ComposeStack } from './stack.ts';

// The restore drill of docs/deployment.md ("The drill on the compose stack"), on the stack of
// docker-compose.yml: the guide's shell blocks run as written, in order (back up, destroy the
// database volume, restore, read back), so the guide cannot drift from what works.

interface Created {
  id: string;
}
interface TokenRead {
  id: string;
  type: string;
  data: unknown;
  metadata?: Record<string, string>;
}

const guide = readFileSync(join(root, 'docs', 'deployment.md'), 'utf8');
const drill = guide.slice(
  guide.indexOf('### The drill on the compose stack'),
  guide.indexOf('After a restore to an earlier point:'),
);
const blocks = [...drill.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1] ?? '');

let stack: ComposeStack;
let client: TokenvaultClient;
let apiKey: string;
let workDir: string;

/**
 * One of the guide's blocks through `sh -e`, in the drill's directory (where the dump goes). The
 * guide writes Compose v2's `docker compose`; this machine has Debian's docker-compose v1, so a
 * `docker` first on PATH hands `docker compose …` to it with the stack's files.
 */
function runBlock(script: string, env: Record<string, string> = {}): string {
  const result = spawnSync('sh', ['-e', '-c', script], {
    cwd: workDir,
    env: { ...stack.env, ...env, PATH: `${join(workDir, 'bin')}:${process.env.PATH ?? ''}` },
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    timeout: 300_000,
  });
  if (result.status !== 0)
    throw new Error(
      `the guide's block exited with ${result.status ?? result.signal}:\n${script}\n--- stdout ---\n${result.stdout.slice(-4000)}\n--- stderr ---\n${result.stderr.slice(-4000)}`,
    );
  return result.stdout;
}

function installDockerComposeV2Shim() {
  const docker = execFileSync('sh', ['-c', 'command -v docker'], { encoding: 'utf8' }).trim();
  const files = [...composeFiles, portsFile].map((file) => `-f '${file}'`).join(' ');
  const shim = join(workDir, 'bin', 'docker');
  execFileSync('mkdir', ['-p', join(workDir, 'bin')]);
  writeFileSync(
    shim,
    `#!/bin/sh\nif [ "$1" = compose ]; then shift; exec docker-compose ${files} --project-directory '${root}' "$@"; fi\nexec '${docker}' "$@"\n`,
  );
  chmodSync(shim, 0o755);
}

const volumes = () => execFileSync('docker', ['volume', 'ls', '--quiet'], { encoding: 'utf8' }).split('\n');

beforeAll(async () => {
  stack = await startComposeStack();
  apiKey = bootstrapTenant(stack, 'Restore Drill', 'owner@example.com').api_key;
  client = new TokenvaultClient(stack.url, apiKey);
  workDir = mkdtempSync(join(tmpdir(), 'tokenvault-restore-drill-'));
  installDockerComposeV2Shim();
});

afterAll(() => {
  stack?.down();
  if (workDir) rmSync(workDir, { recursive: true, force: true });
});

describe("docs/deployment.md's restore drill on the compose stack", () => {
  it('has the four blocks the drill runs: back up, destroy, restore, read back', () => {
    expect(blocks).toHaveLength(4);
    expect(blocks[0]).toContain('pg_dump');
    expect(blocks[1]).toContain('docker volume rm');
    expect(blocks[2]).toContain('pg_restore');
    expect(blocks[3]).toContain('/tokens/$TOKEN_ID');
  });

  it('backs up, loses the database volume, restores it, and reads the token back with its data', async () => {
    const [backUp = '', destroy = '', restore = '', readBack = ''] = blocks;
    const data = { number: randomBytes(6).toString('hex'), holder: 'Ada Lovelace' };
    const kept = await client.request<Created>('POST', '/tokens', {
      body: { type: 'token', data, metadata: { drill: 'kept' } },
    });
    expect(kept.status, JSON.stringify(kept.body)).toBe(201);
    const deletedAfter = await client.request<Created>('POST', '/tokens', {
      body: { data: 'deleted later' },
    });
    expect(deletedAfter.status, JSON.stringify(deletedAfter.body)).toBe(201);

    runBlock(backUp);
    expect(statSync(join(workDir, 'tokenvault.dump')).size).toBeGreaterThan(10_000);
    const status = JSON.parse(readFileSync(join(workDir, 'tokenvault.keys-status.json'), 'utf8')) as {
      tenant_keys_by_kek: Record<string, number>;
    };
    expect(Object.values(status.tenant_keys_by_kek).reduce((sum, count) => sum + count, 0)).toBeGreaterThan(
      0,
    );

    // After the backup: one token deleted (shredded), one made; the restore goes back past both.
    expect((await client.request('DELETE', `/tokens/${deletedAfter.body.id}`)).status).toBe(204);
    const madeAfter = await client.request<Created>('POST', '/tokens', { body: { data: 'made later' } });
    expect(madeAfter.status).toBe(201);

    const volume = `${stack.project}_postgres-data`;
    expect(volumes()).toContain(volume);
    runBlock(destroy);
    expect(volumes()).not.toContain(volume);
    expect(() => stack.sql('SELECT 1'), 'no PostgreSQL between destroy and restore').toThrow();

    runBlock(restore);
    const printed = runBlock(readBack, { BASE: stack.url, KEY: apiKey, TOKEN_ID: kept.body.id });
    const read = JSON.parse(printed.split('\n').find((line) => line.startsWith('{')) ?? '{}') as TokenRead;
    expect(read).toMatchObject({ id: kept.body.id, type: 'token', data, metadata: { drill: 'kept' } });
    expect(printed).toContain('the event log verifies');

    // This process's pooled connections to the load balancer died with it: the first request
    // through one may find it closed, then new ones are opened.
    await waitFor(
      'a read through the restored stack',
      async () => (await client.request('GET', `/tokens/${kept.body.id}`)).status === 200,
    );
    // As the guide says of a restore to an earlier point: the token deleted after the dump is back,
    // readable; the one made after it is gone.
    const back = await client.request<TokenRead>('GET', `/tokens/${deletedAfter.body.id}`);
    expect(back.status, JSON.stringify(back.body)).toBe(200);
    expect(back.body.data).toBe('deleted later');
    expect((await client.request('GET', `/tokens/${madeAfter.body.id}`)).status).toBe(404);
  }, 600_000);

  it("refuses to open the restored database with another keyring than the backup's", () => {
    const otherKeyring = stack.compose(
      [
        'run',
        '--rm',
        '-T',
        '-e',
        `MASTER_KEY=${randomBytes(32).toString('base64')}`,
        'admin-cli',
        'keys',
        'status',
      ],
      { allowFailure: true },
    );
    expect(otherKeyring.status, otherKeyring.stdout).not.toBe(0);
    expect(otherKeyring.stderr).toMatch(/master key version "default" of the local keyring does not open/);
  });
});
