// Installs the workspace's dependencies when they are missing or stale, so that `npm start` and
// `npm test` work on a fresh clone with nothing installed by hand.
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const pnpmVersion = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).packageManager.split('@')[1];
const stampFile = join(root, 'node_modules', '.deps-stamp');

function manifestFiles() {
  const files = ['package.json', 'pnpm-lock.yaml', 'pnpm-workspace.yaml'];
  for (const group of ['packages', 'services']) {
    for (const name of readdirSync(join(root, group))) files.push(join(group, name, 'package.json'));
  }
  files.push(join('e2e', 'package.json'));
  return files.filter((file) => existsSync(join(root, file)));
}

const digest = createHash('sha256');
for (const file of manifestFiles()) digest.update(file).update(readFileSync(join(root, file)));
const wanted = `${pnpmVersion}:${digest.digest('hex')}`;

if (!existsSync(stampFile) || readFileSync(stampFile, 'utf8') !== wanted) {
  const frozen = existsSync(join(root, 'pnpm-lock.yaml')) && process.env.CI ? ['--frozen-lockfile'] : [];
  console.error(`[deps] installing workspace dependencies with pnpm ${pnpmVersion}…`);
  execFileSync('npx', ['--yes', `pnpm@${pnpmVersion}`, 'install', ...frozen], {
    cwd: root,
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env, npm_config_nodedir: process.env.npm_config_nodedir ?? '/usr' },
  });
  writeFileSync(stampFile, wanted);
}
