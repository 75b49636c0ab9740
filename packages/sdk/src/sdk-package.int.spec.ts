import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// What `pnpm --filter @tokenvault/sdk publish` would publish: pnpm's own pack (its prepack builds
// dist/; publishConfig's exports replace the workspace's TypeScript source ones), unpacked and read.
const run = promisify(execFile);
const packageDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const rootManifest = JSON.parse(readFileSync(join(packageDir, '../../package.json'), 'utf8')) as {
  packageManager: string;
};

describe('the published SDK package', () => {
  let workDir: string;
  let files: string[];
  let manifest: {
    name: string;
    version: string;
    license: string;
    types: string;
    exports: Record<string, string | { types: string; default: string }>;
    dependencies: Record<string, string>;
  };
  const packed = (path: string) => readFileSync(join(workDir, 'package', path), 'utf8');

  // The prepack's build and license copy are left as they were found (a developer's own dist/ too).
  const leftBehind = ['dist', 'LICENSE'].filter((path) => !existsSync(join(packageDir, path)));

  beforeAll(async () => {
    workDir = mkdtempSync(join(tmpdir(), 'tv-sdk-pack-'));
    await run('npx', ['--yes', rootManifest.packageManager, 'pack', '--pack-destination', workDir], {
      cwd: packageDir,
    });
    const { version } = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as {
      version: string;
    };
    const { stdout } = await run('tar', ['-xzvf', `tokenvault-sdk-${version}.tgz`], { cwd: workDir });
    files = stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => line.replace(/^package\//, ''))
      .sort();
    manifest = JSON.parse(packed('package.json')) as typeof manifest;
  }, 120_000);
  afterAll(() => {
    rmSync(workDir, { recursive: true, force: true });
    for (const path of leftBehind) rmSync(join(packageDir, path), { recursive: true, force: true });
  });

  it('holds the built client, its types, the document, the README and the license, and nothing else', () => {
    expect(files).toEqual(
      [
        'LICENSE',
        'README.md',
        'dist/api.d.ts',
        'dist/api.js',
        'dist/client.d.ts',
        'dist/client.js',
        'dist/generated/schema.d.ts',
        'dist/generated/schema.js',
        'dist/index.d.ts',
        'dist/index.js',
        'dist/log-proof.d.ts',
        'dist/log-proof.js',
        'dist/webhook-signature.d.ts',
        'dist/webhook-signature.js',
        'openapi.json',
        'package.json',
      ].sort(),
    );
  });

  it('exports the JavaScript build and its types, not the workspace TypeScript', () => {
    expect(manifest).toMatchObject({
      name: '@tokenvault/sdk',
      license: 'Apache-2.0',
      types: './dist/index.d.ts',
    });
    expect(manifest.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(manifest.exports['.']).toEqual({ types: './dist/index.d.ts', default: './dist/index.js' });
    expect(Object.keys(manifest.dependencies)).toEqual(['openapi-fetch']);
    // Relative imports were rewritten to .js (rewriteRelativeImportExtensions): Node loads them.
    expect(packed('dist/index.js')).toContain('from "./api.js"');
    expect(packed('dist/index.js')).not.toMatch(/from ["']\.[^"']*\.ts["']/);
    expect(packed('README.md')).toContain('npm install @tokenvault/sdk');
  });
});
