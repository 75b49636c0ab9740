// Debian's Chromium for the browser tests, driven by playwright-core: never a downloaded browser.
// When /usr/bin/chromium is missing, it is installed with apt (the CI runner of this project is a
// Debian machine where the tests run as root); anywhere else the tests fail saying what to install.
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { ensureDebianPackages } from '../../infra/debian/packages.mjs';

export const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** The browser's path, installed with apt first when it is missing. Takes minutes the first time. */
export function ensureChromium(): string {
  if (existsSync(chromiumPath)) return chromiumPath;
  ensureDebianPackages(['chromium'], 'The browser tests');
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
