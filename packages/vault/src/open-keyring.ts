import { readFileSync } from 'node:fs';
import { ConfigError, type Config } from '@tokenvault/platform';
import { LocalKeyring, parseMasterKeys, type MasterKeyring } from './keyring.ts';
import { HsmUnavailableError, Pkcs11Keyring } from './pkcs11.ts';

/**
 * The master keyring the configuration names: `local` from MASTER_KEYS (or MASTER_KEY as the
 * one-key ring `default`), or `pkcs11`. An HSM that cannot be used is a ConfigError: the process
 * refuses to start, saying why.
 */
export function openMasterKeyring(
  config: Pick<
    Config,
    | 'KEK_PROVIDER'
    | 'MASTER_KEY'
    | 'MASTER_KEYS'
    | 'PKCS11_MODULE'
    | 'PKCS11_TOKEN_LABEL'
    | 'PKCS11_PIN'
    | 'PKCS11_PIN_FILE'
    | 'PKCS11_KEY_LABELS'
  >,
): MasterKeyring {
  if (config.KEK_PROVIDER === 'local') {
    return new LocalKeyring(
      config.MASTER_KEYS ? parseMasterKeys(config.MASTER_KEYS) : [['default', config.MASTER_KEY]],
    );
  }
  let pin = config.PKCS11_PIN;
  if (!pin && config.PKCS11_PIN_FILE) {
    try {
      pin = readFileSync(config.PKCS11_PIN_FILE, 'utf8').trim();
    } catch {
      throw new ConfigError([`PKCS11_PIN_FILE: cannot be read`]);
    }
  }
  try {
    return new Pkcs11Keyring({
      module: config.PKCS11_MODULE!,
      tokenLabel: config.PKCS11_TOKEN_LABEL!,
      pin: pin!,
      keyLabels: config.PKCS11_KEY_LABELS!.split(','),
    });
  } catch (error) {
    if (error instanceof HsmUnavailableError)
      throw new ConfigError([`KEK_PROVIDER=pkcs11: ${error.message}`]);
    throw error;
  }
}
