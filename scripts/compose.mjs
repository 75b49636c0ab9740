// `npm run compose:local -- <docker-compose arguments>`: the full stack of docker-compose.yml on
// this machine, where no image can be pulled. Installs what is missing (Debian's docker.io,
// docker-compose and debootstrap; as root), starts dockerd when none runs, builds whatever local
// image is missing or stale (a base from debootstrap, a Node image with the pinned Node, the
// stand-ins for the official third-party images, the application image), then runs Debian's
// docker-compose with docker-compose.yml plus infra/compose/local.yml (which swaps the images).
// The compose test tier (e2e/compose) uses the same functions.
import { createHash, randomBytes } from 'node:crypto';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureDebianPackages } from '../infra/debian/packages.mjs';
import { fetchJars } from '../infra/kafka/kafka.mjs';
import { installedNode, pinnedVersion } from './pinned-node.mjs';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const imagesDir = join(root, 'infra', 'compose', 'images');
const nodeVersion = pinnedVersion();
const pnpmVersion = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).packageManager.split('@')[1];
// The npm the local Node image carries (the official image has one): the build stage installs pnpm with it.
const npmVersion = '11.6.2';
const label = 'tokenvault.inputs';

/** The images local.yml names, in build order (each on the ones before it). */
export const images = {
  base: 'tokenvault-local/debian:bookworm-slim',
  node: `tokenvault-local/node:${nodeVersion}-bookworm-slim`,
  postgres: 'tokenvault-local/postgres:15',
  redis: 'tokenvault-local/redis:7',
  kafka: 'tokenvault-local/kafka:3.9.1',
  haproxy: 'tokenvault-local/haproxy:2.8',
  mailpit: 'tokenvault-local/mailpit:latest',
  app: 'tokenvault-local/tokenvault:latest',
};

const log = (message) => process.stderr.write(`[compose] ${message}\n`);
const run = (command, args, options = {}) =>
  execFileSync(command, args, { stdio: ['ignore', 'inherit', 'inherit'], ...options });
const quiet = (command, args) => spawnSync(command, args, { encoding: 'utf8' });
const has = (command) => quiet('sh', ['-c', `command -v ${command}`]).status === 0;

/** Why this machine cannot run the stack, or undefined when it can (after installing what is missing). */
export function dockerUnavailableReason() {
  const engineAnswers = has('docker') && quiet('docker', ['info']).status === 0;
  // A docker client alone (some machines have one) is no engine: without an engine that answers,
  // dockerd comes from Debian's docker.io.
  const missing = [
    ...(engineAnswers ? [] : [['dockerd', 'docker.io']]),
    ['docker-compose', 'docker-compose'],
    ['debootstrap', 'debootstrap'],
  ].filter(([command]) => !has(command) && !existsSync(`/usr/sbin/${command}`));
  const root = process.getuid?.() === 0;
  if (missing.length > 0) {
    if (!root || !has('apt-get'))
      return `${missing.map(([, pkg]) => pkg).join(', ')} missing and not root with apt-get to install them`;
    ensureDebianPackages(
      missing.map(([, pkg]) => pkg),
      'The compose tier',
    );
  }
  if (engineAnswers) return undefined;
  if (!root) return 'no Docker engine answers and only root can start dockerd';
  log('starting dockerd (log: /var/log/tokenvault-dockerd.log)…');
  const daemon = spawn('sh', ['-c', 'exec dockerd >> /var/log/tokenvault-dockerd.log 2>&1'], {
    detached: true,
    stdio: 'ignore',
  });
  daemon.unref();
  for (let i = 0; i < 60; i++) {
    if (quiet('docker', ['info']).status === 0) return undefined;
    execFileSync('sleep', ['1']);
  }
  return 'dockerd did not answer within 60 s (see /var/log/tokenvault-dockerd.log)';
}

function hashFiles(digest, dir, base = dir) {
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) hashFiles(digest, path, base);
    else digest.update(relative(base, path)).update(readFileSync(path));
  }
  return digest;
}

const imageId = (image) => quiet('docker', ['image', 'inspect', '-f', '{{.Id}}', image]).stdout.trim();
const inputsOf = (image) =>
  quiet('docker', ['image', 'inspect', '-f', `{{index .Config.Labels "${label}"}}`, image]).stdout.trim();

/** The Debian mirror apt uses here (debootstrap takes the same). */
function debianMirror() {
  const files = [
    '/etc/apt/sources.list',
    ...readdirSync('/etc/apt/sources.list.d').map((f) => `/etc/apt/sources.list.d/${f}`),
  ];
  for (const file of files.filter((f) => /\.(list|sources)$/.test(f) && existsSync(f))) {
    const text = readFileSync(file, 'utf8');
    const uri =
      /^URIs:\s*(\S+)/m.exec(text)?.[1] ?? /^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+bookworm\s/m.exec(text)?.[1];
    if (uri && !uri.includes('security')) return uri;
  }
  return 'http://deb.debian.org/debian';
}

/** docker build of one context, with the inputs' hash as a label; skipped when the label matches. */
function build(image, inputs, context, { dockerfile, args = {} } = {}) {
  if (inputsOf(image) === inputs) return false;
  log(`building ${image}…`);
  const started = Date.now();
  // The legacy builder (Debian's engine has no BuildKit plugin): its output only when it fails.
  const result = spawnSync(
    'docker',
    [
      'build',
      '--quiet',
      '--label',
      `${label}=${inputs}`,
      '--tag',
      image,
      ...(dockerfile ? ['--file', dockerfile] : []),
      ...Object.entries(args).flatMap(([key, value]) => ['--build-arg', `${key}=${value}`]),
      context,
    ],
    { env: { ...process.env, DOCKER_BUILDKIT: '0' }, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
  );
  if (result.status !== 0) {
    process.stderr.write(`${result.stdout ?? ''}${result.stderr ?? ''}`);
    throw new Error(
      `docker build of ${image} failed (exit ${result.status ?? result.signal}); its output is above`,
    );
  }
  log(`built ${image} in ${Math.round((Date.now() - started) / 1000)} s`);
  return true;
}

/**
 * What makes debian:bookworm-slim slim, done to the debootstrap tree: no documentation, manuals or
 * translations (and dpkg leaves them out of later installs), no package lists, and apt configured
 * to keep no lists or caches in an image layer (the official images' docker-clean).
 */
function slimLikeDebianSlim(dir) {
  writeFileSync(
    join(dir, 'etc', 'dpkg', 'dpkg.cfg.d', 'docker-slim'),
    [
      'path-exclude /usr/share/doc/*',
      'path-include /usr/share/doc/*/copyright',
      'path-exclude /usr/share/groff/*',
      'path-exclude /usr/share/info/*',
      'path-exclude /usr/share/linda/*',
      'path-exclude /usr/share/lintian/overrides/*',
      'path-exclude /usr/share/locale/*',
      'path-exclude /usr/share/man/*',
      '',
    ].join('\n'),
  );
  const clean =
    'rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true';
  writeFileSync(
    join(dir, 'etc', 'apt', 'apt.conf.d', 'docker-clean'),
    `DPkg::Post-Invoke { "${clean}"; };\nAPT::Update::Post-Invoke { "${clean}"; };\nDir::Cache::pkgcache "";\nDir::Cache::srcpkgcache "";\n`,
  );
  // Files only: some packages' scripts expect the directories (openjdk's man1 links).
  execFileSync('sh', [
    '-c',
    `cd "$0" && find usr/share/doc -type f ! -name copyright -delete && find usr/share/doc -type l -delete \
      && find usr/share/man usr/share/info usr/share/locale usr/share/groff usr/share/lintian \
           \\( -type f -o -type l \\) -delete 2>/dev/null; rm -rf var/lib/apt/lists/* var/cache/apt/*.bin`,
    dir,
  ]);
}

function buildBase() {
  const mirror = debianMirror();
  const inputs = createHash('sha256').update(`debootstrap minbase bookworm ${mirror} slim v2`).digest('hex');
  if (inputsOf(images.base) === inputs) return;
  log(`building ${images.base} with debootstrap from ${mirror} (a minute or more)…`);
  const started = Date.now();
  const dir = mkdtempSync(join(tmpdir(), 'tokenvault-debootstrap-'));
  // debootstrap mounts /proc (and more) inside the tree while it runs: never archive or delete
  // through a mount.
  const unmountInside = () => {
    const mounted = readFileSync('/proc/mounts', 'utf8')
      .split('\n')
      .map((line) => line.split(' ')[1])
      .filter((point) => point?.startsWith(`${dir}/`));
    for (const point of mounted.reverse()) quiet('umount', ['-l', point]);
    return !readFileSync('/proc/mounts', 'utf8').includes(`${dir}/`);
  };
  try {
    run('debootstrap', ['--variant=minbase', 'bookworm', dir, mirror], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    if (!unmountInside()) throw new Error(`something is still mounted inside ${dir}`);
    rmSync(join(dir, 'var', 'cache', 'apt', 'archives'), { recursive: true, force: true });
    mkdirSync(join(dir, 'var', 'cache', 'apt', 'archives', 'partial'), { recursive: true });
    slimLikeDebianSlim(dir);
    execFileSync(
      'sh',
      [
        '-c',
        `tar -C "$0" -c . | docker import -c 'CMD ["bash"]' -c 'LABEL ${label}=${inputs}' - "$1" > /dev/null`,
        dir,
        images.base,
      ],
      { stdio: ['ignore', 'inherit', 'inherit'] },
    );
    log(`built ${images.base} in ${Math.round((Date.now() - started) / 1000)} s`);
  } finally {
    if (unmountInside()) rmSync(dir, { recursive: true, force: true });
    else log(`left ${dir} in place: something is still mounted inside it`);
  }
}

function buildNode() {
  // The exact pinned build (installed if missing), whatever Node runs this: node.mjs runs any Node
  // of the pinned major as is.
  const nodeBinary = installedNode(nodeVersion);
  const dockerfile = join(imagesDir, 'node', 'Dockerfile');
  const extraCa =
    process.env.NODE_EXTRA_CA_CERTS && existsSync(process.env.NODE_EXTRA_CA_CERTS)
      ? process.env.NODE_EXTRA_CA_CERTS
      : undefined;
  const inputs = createHash('sha256')
    .update(readFileSync(dockerfile))
    .update(extraCa ? readFileSync(extraCa) : '')
    .update(`${nodeVersion} npm@${npmVersion} ${imageId(images.base)}`)
    .digest('hex');
  if (inputsOf(images.node) === inputs) return;
  const context = mkdtempSync(join(tmpdir(), 'tokenvault-node-image-'));
  try {
    cpSync(dockerfile, join(context, 'Dockerfile'));
    cpSync(nodeBinary, join(context, 'node'));
    // The official image carries this Node's headers (native add-ons such as pkcs11js build on them).
    cpSync(join(dirname(dirname(nodeBinary)), 'include', 'node'), join(context, 'include-node'), {
      recursive: true,
    });
    // This machine reaches the npm registry through the certificate authorities Node trusts here
    // (NODE_EXTRA_CA_CERTS): the local Node image trusts them too, so the build stage's npm works.
    if (extraCa) {
      cpSync(extraCa, join(context, 'extra-ca.crt'));
      writeFileSync(
        join(context, 'Dockerfile'),
        `${readFileSync(dockerfile, 'utf8')}COPY extra-ca.crt /usr/local/share/tokenvault/extra-ca.crt\nENV NODE_EXTRA_CA_CERTS=/usr/local/share/tokenvault/extra-ca.crt\n`,
      );
    }
    // npm from the registry (the npm package), unpacked as the official image carries it.
    const tarball = execFileSync('npm', ['pack', '--silent', `npm@${npmVersion}`], {
      cwd: context,
      encoding: 'utf8',
    })
      .trim()
      .split('\n')
      .at(-1);
    mkdirSync(join(context, 'npm'));
    run('tar', ['-xzf', join(context, tarball), '-C', join(context, 'npm'), '--strip-components=1']);
    rmSync(join(context, tarball));
    build(images.node, inputs, context, { args: { BASE_IMAGE: images.base } });
  } finally {
    rmSync(context, { recursive: true, force: true });
  }
}

function buildStandIn(name, extra = () => {}) {
  const dir = join(imagesDir, name);
  const inputs = hashFiles(createHash('sha256'), dir).update(
    imageId(name === 'mailpit' ? images.node : images.base),
  );
  const context = mkdtempSync(join(tmpdir(), `tokenvault-${name}-image-`));
  try {
    cpSync(dir, context, { recursive: true });
    extra(context, inputs);
    build(images[name], inputs.digest('hex'), context, {
      args: { BASE_IMAGE: name === 'mailpit' ? images.node : images.base },
    });
  } finally {
    rmSync(context, { recursive: true, force: true });
  }
}

/** The application's build inputs: what infra/docker/Dockerfile copies (.dockerignore leaves the rest out). */
function appInputs() {
  const listed = execFileSync(
    'git',
    [
      'ls-files',
      '-co',
      '--exclude-standard',
      '--',
      'package.json',
      'pnpm-lock.yaml',
      'pnpm-workspace.yaml',
      'packages',
      'services',
      'e2e/package.json',
      'tsconfig.base.json',
      'tsconfig.json',
      'infra/docker',
      '.dockerignore',
    ],
    { cwd: root, encoding: 'utf8' },
  )
    .split('\n')
    .filter((file) => file && existsSync(join(root, file)))
    .sort();
  const digest = createHash('sha256')
    .update(imageId(images.node))
    .update(imageId(images.base))
    .update(pnpmVersion);
  for (const file of listed) digest.update(file).update(readFileSync(join(root, file)));
  return digest.digest('hex');
}

/** Builds every local image that is missing or stale; returns the seconds it took. */
export function ensureImages() {
  const started = Date.now();
  buildBase();
  buildNode();
  buildStandIn('postgres');
  buildStandIn('redis');
  buildStandIn('haproxy');
  buildStandIn('mailpit');
  buildStandIn('kafka', (context, inputs) => {
    const jars = fetchJars({ quiet: true });
    cpSync(jars, join(context, 'jars'), { recursive: true });
    for (const jar of readdirSync(jars).sort()) inputs.update(jar);
  });
  build(images.app, appInputs(), root, {
    dockerfile: join(root, 'infra', 'docker', 'Dockerfile'),
    args: { NODE_IMAGE: images.node, RUNTIME_IMAGE: images.base, PNPM_VERSION: pnpmVersion },
  });
  return Math.round((Date.now() - started) / 1000);
}

export const composeFiles = [join(root, 'docker-compose.yml'), join(root, 'infra', 'compose', 'local.yml')];

/** docker-compose with the user's file and the local override (plus `extraFiles`), in the repository. */
export function dockerCompose(args, { extraFiles = [], env = process.env, stdio = 'inherit' } = {}) {
  return spawnSync(
    'docker-compose',
    [
      ...[...composeFiles, ...extraFiles].flatMap((file) => ['-f', file]),
      '--project-directory',
      root,
      ...args,
    ],
    { cwd: root, env, stdio, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
  );
}

/**
 * A secret of the local stack (MASTER_KEY, POSTGRES_PASSWORD): the environment's, or one generated
 * once and kept in .data/compose (gitignored), so the stack's volumes stay readable across runs.
 */
function localSecret(name, file, generate) {
  if (process.env[name]) return process.env[name];
  const path = join(root, '.data', 'compose', file);
  if (!existsSync(path)) {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, `${generate()}\n`, { mode: 0o600 });
    log(`${name} not set: generated one for the local stack in ${relative(root, path)}`);
  }
  return readFileSync(path, 'utf8').trim();
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const reason = dockerUnavailableReason();
  if (reason) {
    log(`cannot run the local stack: ${reason}`);
    process.exit(1);
  }
  const args = process.argv.slice(2);
  // Commands that start containers need the images; `ps`, `logs`, `down` do not.
  if (args.some((arg) => ['up', 'run', 'create', 'start', 'restart', 'build'].includes(arg))) ensureImages();
  const result = dockerCompose(args, {
    env: {
      COMPOSE_PROJECT_NAME: 'tokenvault',
      ...process.env,
      MASTER_KEY: localSecret('MASTER_KEY', 'master-key', () => randomBytes(32).toString('base64')),
      POSTGRES_PASSWORD: localSecret('POSTGRES_PASSWORD', 'postgres-password', () =>
        randomBytes(24).toString('hex'),
      ),
    },
  });
  process.exit(result.status ?? 1);
}
