import type { KeyObject } from 'node:crypto';
import { open, seal, secretKeyOf } from './crypto.ts';

/**
 * The master keys (key-encryption keys, KEKs) that wrap tenant keys: a versioned ring, in the
 * process (`local`) or in an HSM (`pkcs11`). The primary wraps new keys; every version unwraps.
 * A cloud KMS or a Vault/OpenBao transit adapter would implement this same interface
 * (docs/key-management.md).
 */
export interface MasterKeyring {
  readonly provider: 'local' | 'pkcs11';
  /** The version that wraps new keys. */
  readonly primary: string;
  /** Every version this process can unwrap with, primary first. */
  readonly versions: readonly string[];
  wrap(version: string, key: Buffer, associatedData: string): Promise<string>;
  unwrap(version: string, wrapped: string, associatedData: string): Promise<Buffer>;
  close(): Promise<void>;
}

/** A version of the master key that this process does not hold. */
export class MissingMasterKeyError extends Error {
  readonly version: string;
  constructor(version: string) {
    super(`the master keyring has no key version "${version}"`);
    this.version = version;
    this.name = 'MissingMasterKeyError';
  }
}

/** Master keys held in the process's memory (MASTER_KEYS, or MASTER_KEY as the ring `default`). */
export class LocalKeyring implements MasterKeyring {
  readonly provider = 'local' as const;
  readonly primary: string;
  readonly versions: readonly string[];
  private readonly keys: ReadonlyMap<string, KeyObject>;

  constructor(keys: readonly (readonly [version: string, base64: string])[]) {
    if (keys.length === 0) throw new Error('the master keyring is empty');
    this.keys = new Map(
      keys.map(([version, base64]) => {
        const key = Buffer.from(base64, 'base64');
        if (key.length !== 32) throw new Error(`master key ${version} must be 32 bytes`);
        return [version, secretKeyOf(key)] as const;
      }),
    );
    this.versions = keys.map(([version]) => version);
    this.primary = this.versions[0]!;
  }

  wrap(version: string, key: Buffer, associatedData: string): Promise<string> {
    return Promise.resolve(seal(this.key(version), key, associatedData));
  }

  async unwrap(version: string, wrapped: string, associatedData: string): Promise<Buffer> {
    await Promise.resolve();
    return open(this.key(version), wrapped, associatedData);
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  private key(version: string): KeyObject {
    const key = this.keys.get(version);
    if (!key) throw new MissingMasterKeyError(version);
    return key;
  }
}

/** `MASTER_KEYS=<id>:<base64>,<id>:<base64>…` (first primary), already checked by the config schema. */
export function parseMasterKeys(text: string): [string, string][] {
  return text.split(',').map((entry) => {
    const at = entry.indexOf(':');
    return [entry.slice(0, at).trim(), entry.slice(at + 1).trim()];
  });
}
