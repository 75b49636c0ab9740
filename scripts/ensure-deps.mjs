// Installs the workspace's dependencies when they are missing or stale, so that `npm start` and
// `npm test` work on a fresh clone with nothing installed by hand. Runs on the pinned Node
// (scripts/node.mjs): native add-ons are chosen or built for the running Node's ABI, so the stamp
// holds the Node version too and a change of Node reinstalls.
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

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

function stamp() {
  const digest = createHash('sha256');
  for (const file of manifestFiles()) digest.update(file).update(readFileSync(join(root, file)));
  return `${pnpmVersion}:node-${process.version}-abi${process.versions.modules}:${digest.digest('hex')}`;
}

// Headers for add-ons built from source: those of the running Node (the pinned package ships them
// in include/node), never another Node's (an inherited nodedir, like /usr, may be an older Node's).
const headersOf = (dir) => {
  const file = dir && join(dir, 'include', 'node', 'node_version.h');
  const major =
    file && existsSync(file) && /#define NODE_MAJOR_VERSION (\d+)/.exec(readFileSync(file, 'utf8'))?.[1];
  return major === process.versions.node.split('.')[0];
};
const nodedir = [dirname(dirname(process.execPath)), process.env.npm_config_nodedir].find(headersOf);
const { npm_config_nodedir: _inherited, ...inheritedEnv } = process.env;

if (!existsSync(stampFile) || readFileSync(stampFile, 'utf8') !== stamp()) {
  const frozen = existsSync(join(root, 'pnpm-lock.yaml')) && process.env.CI ? ['--frozen-lockfile'] : [];
  console.error(
    `[deps] installing workspace dependencies with pnpm ${pnpmVersion} on Node ${process.version}…`,
  );
  execFileSync('npx', ['--yes', `pnpm@${pnpmVersion}`, 'install', ...frozen], {
    cwd: root,
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...inheritedEnv, ...(nodedir ? { npm_config_nodedir: nodedir } : {}) },
  });
  writeFileSync(stampFile, stamp()); // after the install: it may have updated the lockfile
}
