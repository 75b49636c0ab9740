// SoftHSM2 (Debian's softhsm2, with opensc's pkcs11-tool) for the PKCS#11 tests: installed with
// apt when missing (the CI runner is a Debian machine where the tests run as root), as the browser
// tests install chromium; anywhere else the tests fail saying what to install. Each test makes its
// own token directory and SOFTHSM2_CONF, so nothing is shared with other runs.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureDebianPackages } from '../../infra/debian/packages.mjs';

const modules = ['/usr/lib/softhsm/libsofthsm2.so', '/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so'];
const pkcs11Tool = '/usr/bin/pkcs11-tool';
const softhsmUtil = '/usr/bin/softhsm2-util';

function run(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): string {
  const result = spawnSync(command, args, {
    env: { ...env, DEBIAN_FRONTEND: 'noninteractive' },
    encoding: 'utf8',
  });
  if (result.error) throw result.error;
  if (result.status !== 0) {
    throw new Error(`${command} ${args[0] ?? ''} exited with ${result.status}: ${result.stderr}`);
  }
  return result.stdout;
}

/** The SoftHSM2 PKCS#11 library's path, installed with apt first when it is missing. */
export function ensureSoftHsm(): string {
  const installed = () => modules.find((path) => existsSync(path));
  if (installed() && existsSync(pkcs11Tool) && existsSync(softhsmUtil)) return installed()!;
  ensureDebianPackages(['softhsm2', 'opensc'], 'The PKCS#11 tests');
  const module = installed();
  if (!module || !existsSync(pkcs11Tool))
    throw new Error('apt installed softhsm2 and opensc, but they are still missing');
  return module;
}

export interface SoftHsmToken {
  module: string;
  tokenLabel: string;
  pin: string;
  /** SOFTHSM2_CONF for every process that uses the token. */
  env: { SOFTHSM2_CONF: string };
  /** Generates a non-extractable AES-256 key on the token (inside the HSM). */
  generateKey(label: string): void;
}

/** A fresh token in a directory of its own. */
export function createSoftHsmToken(tokenLabel = 'tokenvault-test', pin = '246813'): SoftHsmToken {
  const module = ensureSoftHsm();
  const dir = mkdtempSync(join(tmpdir(), 'tv-softhsm-'));
  mkdirSync(join(dir, 'tokens'));
  const conf = join(dir, 'softhsm2.conf');
  writeFileSync(
    conf,
    `directories.tokendir = ${join(dir, 'tokens')}\nobjectstore.backend = file\nlog.level = ERROR\n`,
  );
  const env = { ...process.env, SOFTHSM2_CONF: conf };
  run(
    softhsmUtil,
    ['--init-token', '--free', '--label', tokenLabel, '--pin', pin, '--so-pin', `${pin}0`],
    env,
  );
  return {
    module,
    tokenLabel,
    pin,
    env: { SOFTHSM2_CONF: conf },
    generateKey(label: string) {
      // Without --extractable the key is never extractable: its bytes never leave the HSM.
      run(
        pkcs11Tool,
        [
          '--module',
          module,
          '--token-label',
          tokenLabel,
          '--login',
          '--pin',
          pin,
          '--keygen',
          '--key-type',
          'AES:32',
          '--label',
          label,
          '--sensitive',
        ],
        env,
      );
    },
  };
}
