// Debian packages the tests and tools need (Chromium, Docker, SoftHSM2, …), installed with apt when
// missing. One installer for all of them: vitest runs test files in parallel, and two apt-get runs at
// once fail on apt's locks, so every install here waits its turn on one file lock (flock), and apt
// itself waits for a lock held by anything else (DPkg::Lock::Timeout). Kept plain JavaScript so that
// scripts on any Node and the TypeScript tests share it.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const lockFile = '/var/lock/tokenvault-apt.lock';
const waitSeconds = 900;

/** True when the command line tool is on PATH. */
export function hasCommand(command) {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
}

/** True when every package is installed (dpkg says "install ok installed"). */
export function installed(packages) {
  const result = spawnSync('dpkg-query', ['-W', '-f=${Status}\n', ...packages], { encoding: 'utf8' });
  return (
    result.status === 0 &&
    result.stdout
      .trim()
      .split('\n')
      .every((line) => line === 'install ok installed')
  );
}

/**
 * Installs the Debian packages that are missing, as root, with apt; `why` names what needs them in
 * the error a machine without root or apt gets. Returns at once when all are there.
 */
export function ensureDebianPackages(packages, why) {
  if (installed(packages)) return;
  if (process.getuid?.() !== 0 || !existsSync('/usr/bin/apt-get')) {
    throw new Error(
      `${why} need the Debian packages ${packages.join(', ')}, and installing them needs root and apt-get: ` +
        `run \`sudo apt-get update && sudo apt-get install -y ${packages.join(' ')}\`.`,
    );
  }
  process.stderr.write(`[apt] installing ${packages.join(', ')} for ${why}…\n`);
  const aptOptions = `-o DPkg::Lock::Timeout=${waitSeconds} -o Acquire::Retries=3`;
  const script =
    `apt-get ${aptOptions} update -qq && ` +
    `apt-get ${aptOptions} install -y -qq --no-install-recommends ${packages.join(' ')}`;
  let status = 1;
  // apt-get update has no lock timeout of its own in every apt version: retry a busy lock a few times.
  for (let attempt = 1; attempt <= 3 && status !== 0; attempt++) {
    const result = spawnSync('flock', ['-w', String(waitSeconds), lockFile, 'sh', '-c', script], {
      stdio: ['ignore', 'inherit', 'inherit'],
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
    if (result.error) throw result.error;
    status = result.status ?? 1;
    if (status !== 0 && attempt < 3) spawnSync('sleep', [String(5 * attempt)]);
  }
  if (status !== 0 || !installed(packages)) {
    throw new Error(
      `apt-get could not install ${packages.join(', ')} (exit ${status}); see the output above`,
    );
  }
}
