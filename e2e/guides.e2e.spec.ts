import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasCommand, ensureDebianPackages } from '../infra/debian/packages.mjs';
import { startHttpDestination, type TestDestination } from './support/destinations.ts';
import { startSmtpServer, type TestSmtpServer } from './support/smtp.ts';
import { startStack, type TestStack } from './support/stack.ts';

// Every ```sh block of docs/guides/*.md runs here, against a stack of its own, so a guide cannot
// rot: one bash session per guide (a block may set variables the next blocks of its guide use),
// its blocks in order, with BASE and KEY (a management key of a tenant of the guide's own) and
// RECEIVER_URL (an http receiver on loopback that answers 201 with what it got: the proxy's
// destination and the webhooks' receiver). curl runs with --fail-with-body (a curlrc), so an HTTP
// error fails the block as a non-zero exit does. Blocks fenced otherwise (```console, ```text)
// are not run: the guides say why each is.

const repoRoot = fileURLToPath(new URL('..', import.meta.url));
const guidesDir = join(repoRoot, 'docs', 'guides');

interface ShellBlock {
  /** 1-based, in the guide's order. */
  number: number;
  /** The line of its opening fence. */
  line: number;
  text: string;
}

function shellBlocksOf(markdown: string): ShellBlock[] {
  const blocks: ShellBlock[] = [];
  const lines = markdown.split('\n');
  for (let index = 0; index < lines.length; index++) {
    if (lines[index] !== '```sh') continue;
    const end = lines.indexOf('```', index + 1);
    if (end < 0) throw new Error(`an unclosed \`\`\`sh block at line ${index + 1}`);
    blocks.push({ number: blocks.length + 1, line: index + 1, text: lines.slice(index + 1, end).join('\n') });
    index = end;
  }
  return blocks;
}

interface GuideRun {
  guide: string;
  blocks: ShellBlock[];
  env: Record<string, string>;
  timeoutMs?: number;
}

/** Runs a guide's blocks in one bash session; rejects naming the guide and the block that failed. */
async function runGuide({ guide, blocks, env, timeoutMs = 100_000 }: GuideRun): Promise<void> {
  const workDir = mkdtempSync(join(tmpdir(), 'tv-guide-'));
  const marker = join(workDir, '.block');
  writeFileSync(join(workDir, '.curlrc'), '--fail-with-body\n');
  const script = [
    'set -euo pipefail',
    ...blocks.flatMap((block) => [`printf '%s' ${block.number} > "${marker}"`, block.text]),
    `printf done > "${marker}"`,
  ].join('\n');
  try {
    const { code, stdout, stderr } = await new Promise<{
      code: number | null;
      stdout: string;
      stderr: string;
    }>((resolve, reject) => {
      const child = spawn('bash', ['--noprofile', '--norc', '-s'], {
        cwd: workDir,
        env: { PATH: process.env.PATH ?? '', HOME: workDir, CURL_HOME: workDir, LANG: 'C.UTF-8', ...env },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      child.on('error', reject);
      child.on('close', (exitCode) => {
        clearTimeout(timer);
        resolve({ code: exitCode, stdout, stderr });
      });
      child.stdin.end(script);
    });
    // To compare what a guide says you should see with what its commands printed.
    if (process.env.GUIDES_OUTPUT_DIR) {
      writeFileSync(
        join(process.env.GUIDES_OUTPUT_DIR, `${guide}.out`),
        `${stdout}\n--- stderr ---\n${stderr}`,
      );
    }
    const reached = readFileSync(marker, 'utf8');
    if (code === 0 && reached === 'done') return;
    const block = blocks.find((candidate) => String(candidate.number) === reached);
    const tail = (text: string) => text.split('\n').slice(-15).join('\n');
    throw new Error(
      `docs/guides/${guide}: shell block ${reached} (line ${block?.line ?? '?'}) ` +
        `${code === null ? `did not finish within ${timeoutMs} ms` : `exited ${code}`}:\n` +
        `${block?.text ?? ''}\n--- stdout ---\n${tail(stdout)}\n--- stderr ---\n${tail(stderr)}`,
    );
  } finally {
    rmSync(workDir, { recursive: true, force: true });
  }
}

const guides = readdirSync(guidesDir)
  .filter((name) => name.endsWith('.md'))
  .sort();

describe('the guide runner', () => {
  it('names the guide and the block that failed, and runs blocks in one session', async () => {
    const blocks = shellBlocksOf(
      ['```sh', 'GREETING=hello', '```', 'Then:', '```sh', 'test "$GREETING" = hello', 'false', '```'].join(
        '\n',
      ),
    );
    expect(blocks.map((block) => block.line)).toEqual([1, 5]);
    await expect(runGuide({ guide: 'made-up.md', blocks, env: {} })).rejects.toThrow(
      /docs\/guides\/made-up\.md: shell block 2 \(line 5\) exited 1/,
    );
  });

  it('fails a block whose curl gets an HTTP error', async () => {
    const receiver = await startHttpDestination('127.0.0.1');
    receiver.answer((_request, res) => res.writeHead(404).end('{}'));
    try {
      const blocks = shellBlocksOf(['```sh', 'curl -s "$RECEIVER_URL/nothing"', '```'].join('\n'));
      await expect(
        runGuide({ guide: 'made-up.md', blocks, env: { RECEIVER_URL: receiver.url } }),
      ).rejects.toThrow(/shell block 1 \(line 1\) exited 22/);
    } finally {
      await receiver.close();
    }
  });
});

describe('docs/guides', () => {
  let stack: TestStack;
  let smtp: TestSmtpServer;
  let receiver: TestDestination;

  beforeAll(async () => {
    if (!hasCommand('jq')) ensureDebianPackages(['jq'], 'The guides (docs/guides) read answers with jq');
    smtp = await startSmtpServer();
    receiver = await startHttpDestination('127.0.0.1');
    stack = await startStack({
      LOG_LEVEL: 'warn',
      SMTP_URL: smtp.url,
      // The guides' receiver listens on loopback, which an operator allow-lists for the proxy and
      // webhooks with these two settings (the guides say so).
      PROXY_ALLOWED_PRIVATE_ADDRESSES: '127.0.0.1',
      WEBHOOK_ALLOWED_PRIVATE_ADDRESSES: '127.0.0.1',
      WEBHOOK_BACKOFF_MS: '200',
      // Signed tree heads, as a deployment should have: the verifiable-log guide reads the key.
      LOG_SIGNING_KEY: randomBytes(32).toString('base64'),
    });
  });
  afterAll(async () => {
    await stack?.stop();
    await Promise.all([receiver?.close(), smtp?.stop()]);
  });

  it('has an index that links every guide, and every guide runs something', () => {
    const index = readFileSync(join(guidesDir, 'README.md'), 'utf8');
    for (const guide of guides.filter((name) => name !== 'README.md')) {
      expect(index, `docs/guides/README.md links ${guide}`).toContain(`](${guide})`);
      const text = readFileSync(join(guidesDir, guide), 'utf8');
      expect(shellBlocksOf(text).length, `${guide} has a \`\`\`sh block`).toBeGreaterThan(0);
    }
  });

  for (const guide of guides) {
    const blocks = shellBlocksOf(readFileSync(join(guidesDir, guide), 'utf8'));
    if (blocks.length === 0) continue;
    it(`${guide}: every shell block runs`, async () => {
      const tenant = await stack.createTenant(`Guide ${guide}`);
      await runGuide({
        guide,
        blocks,
        env: { BASE: stack.url, KEY: tenant.apiKey, RECEIVER_URL: receiver.url },
      });
    });
  }
});
