// Debian's Chromium for the browser tests, driven by playwright-core: never a downloaded browser.
// When /usr/bin/chromium is missing, it is installed with apt (the CI runner of this project is a
// Debian machine where the tests run as root); anywhere else the tests fail saying what to install.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

export const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

function run(command: string, args: string[]): void {
  const result = spawnSync(command, args, {
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  if (result.error) throw result.error;
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} exited with ${result.status}`);
}

/** The browser's path, installed with apt first when it is missing. Takes minutes the first time. */
export function ensureChromium(): string {
  if (existsSync(chromiumPath)) return chromiumPath;
  if (process.getuid?.() !== 0) {
    throw new Error(
      `The browser tests need Chromium at ${chromiumPath}, and installing it needs root. ` +
        'Run `sudo apt-get update && sudo apt-get install -y chromium` (Debian), ' +
        'or set CHROMIUM_PATH to an installed Chromium.',
    );
  }
  if (!existsSync('/usr/bin/apt-get')) {
    throw new Error(
      `Chromium is missing at ${chromiumPath} and this machine has no apt-get: install it yourself.`,
    );
  }
  process.stderr.write(`[browser] ${chromiumPath} is missing: installing Debian's chromium with apt…\n`);
  run('apt-get', ['update']);
  run('apt-get', ['install', '-y', '--no-install-recommends', 'chromium']);
  if (!existsSync(chromiumPath))
    throw new Error(`apt installed chromium, but ${chromiumPath} is still missing`);
  return chromiumPath;
}

export async function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: ensureChromium(),
    headless: true,
    // Root in a container: Chromium's sandbox needs user namespaces it may not have.
    args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
  });
}

// `node e2e/support/browser.ts`: installs the browser ahead of a test run.
if (import.meta.url === `file://${process.argv[1]}`) {
  process.stdout.write(`${ensureChromium()}\n`);
}
