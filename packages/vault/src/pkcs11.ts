import { randomBytes } from 'node:crypto';
import pkcs11js from 'pkcs11js';
import { MissingMasterKeyError, type MasterKeyring } from './keyring.ts';

const ivLength = 12;
const tagBits = 128;
const prefix = 'p11.';

export interface Pkcs11Options {
  /** Path of the PKCS#11 library (e.g. SoftHSM2's libsofthsm2.so). */
  module: string;
  tokenLabel: string;
  pin: string;
  /** Labels of AES keys on the token, primary first. */
  keyLabels: readonly string[];
}

/** The HSM refused or could not be used: start-up fails with this, never a 500 later. */
export class HsmUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'HsmUnavailableError';
  }
}

const codeOf = (error: unknown) => (error instanceof Error ? error.message.split(':')[0] : 'unknown error');

/**
 * Master keys in an HSM through PKCS#11: each version is a non-extractable AES key found by its
 * label, and every wrap and unwrap is an AES-GCM encryption inside the HSM (CKM_AES_GCM). The
 * key bytes never leave the HSM; this process holds a session and key handles only.
 */
export class Pkcs11Keyring implements MasterKeyring {
  readonly provider = 'pkcs11' as const;
  readonly primary: string;
  readonly versions: readonly string[];
  private readonly library: pkcs11js.PKCS11;
  private readonly session: Buffer;
  private readonly handles: ReadonlyMap<string, Buffer>;

  constructor(options: Pkcs11Options) {
    if (options.keyLabels.length === 0) throw new HsmUnavailableError('PKCS11_KEY_LABELS is empty');
    this.versions = [...options.keyLabels];
    this.primary = this.versions[0]!;
    this.library = new pkcs11js.PKCS11();
    try {
      this.library.load(options.module);
    } catch (error) {
      throw new HsmUnavailableError(`PKCS11_MODULE cannot be loaded (${codeOf(error)})`);
    }
    this.library.C_Initialize();
    try {
      const slot = this.library
        .C_GetSlotList(true)
        .find((candidate) => this.library.C_GetTokenInfo(candidate).label.trim() === options.tokenLabel);
      if (!slot) throw new HsmUnavailableError(`no PKCS#11 token labelled "${options.tokenLabel}"`);
      this.session = this.library.C_OpenSession(slot, pkcs11js.CKF_SERIAL_SESSION | pkcs11js.CKF_RW_SESSION);
      try {
        this.library.C_Login(this.session, pkcs11js.CKU_USER, options.pin);
      } catch (error) {
        // CKR_PIN_INCORRECT, CKR_PIN_LOCKED…: the code only, never the PIN.
        throw new HsmUnavailableError(
          `PKCS#11 login to token "${options.tokenLabel}" failed: ${codeOf(error)} (check PKCS11_PIN or PKCS11_PIN_FILE)`,
        );
      }
      this.handles = new Map(this.versions.map((label) => [label, this.findKey(label)] as const));
    } catch (error) {
      this.library.C_Finalize();
      throw error;
    }
  }

  wrap(version: string, key: Buffer, associatedData: string): Promise<string> {
    const iv = randomBytes(ivLength);
    this.library.C_EncryptInit(this.session, this.mechanism(iv, associatedData), this.handle(version));
    const sealed = this.library.C_Encrypt(this.session, key, Buffer.alloc(key.length + tagBits / 8));
    return Promise.resolve(`${prefix}${Buffer.concat([iv, sealed]).toString('base64')}`);
  }

  unwrap(version: string, wrapped: string, associatedData: string): Promise<Buffer> {
    if (!wrapped.startsWith(prefix)) return Promise.reject(new Error('not wrapped by a PKCS#11 key'));
    const bytes = Buffer.from(wrapped.slice(prefix.length), 'base64');
    const handle = this.handle(version);
    this.library.C_DecryptInit(
      this.session,
      this.mechanism(bytes.subarray(0, ivLength), associatedData),
      handle,
    );
    const body = bytes.subarray(ivLength);
    return Promise.resolve(
      Buffer.from(this.library.C_Decrypt(this.session, body, Buffer.alloc(body.length))),
    );
  }

  close(): Promise<void> {
    try {
      this.library.C_Logout(this.session);
      this.library.C_CloseSession(this.session);
    } finally {
      this.library.C_Finalize();
    }
    return Promise.resolve();
  }

  private mechanism(iv: Buffer, associatedData: string): pkcs11js.Mechanism {
    return {
      mechanism: pkcs11js.CKM_AES_GCM,
      parameter: {
        type: pkcs11js.CK_PARAMS_AES_GCM_v240,
        iv,
        aad: Buffer.from(associatedData, 'utf8'),
        ivBits: ivLength * 8,
        tagBits,
      } as pkcs11js.AesGCM,
    };
  }

  private handle(version: string): Buffer {
    const handle = this.handles.get(version);
    if (!handle) throw new MissingMasterKeyError(version);
    return handle;
  }

  /** The key must be there and non-extractable: master key material never leaves the HSM. */
  private findKey(label: string): Buffer {
    this.library.C_FindObjectsInit(this.session, [
      { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_SECRET_KEY },
      { type: pkcs11js.CKA_LABEL, value: label },
    ]);
    const handle = this.library.C_FindObjects(this.session);
    this.library.C_FindObjectsFinal(this.session);
    if (!handle) throw new HsmUnavailableError(`no key labelled "${label}" on the PKCS#11 token`);
    const [extractable] = this.library.C_GetAttributeValue(this.session, handle, [
      { type: pkcs11js.CKA_EXTRACTABLE },
    ]);
    const value = extractable?.value;
    if (Buffer.isBuffer(value) && value[0] !== 0) {
      throw new HsmUnavailableError(`the PKCS#11 key "${label}" is extractable: generate it non-extractable`);
    }
    return handle;
  }
}
