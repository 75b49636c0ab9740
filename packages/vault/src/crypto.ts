import {
  createCipheriv,
  createDecipheriv,
  createHmac,
  createSecretKey,
  hkdfSync,
  type KeyObject,
  randomBytes,
} from 'node:crypto';

/**
 * Keys are KeyObjects, made once where a key is created or unwrapped: node:crypto checks a Buffer
 * key by throwing (and catching) two errors with stack traces on every cipher or HMAC, which was
 * about 10 µs of each seal.
 */
export const secretKeyOf = (bytes: Buffer): KeyObject => createSecretKey(bytes);

/**
 * A 256-bit key for one purpose derived from the master key (base64) by HKDF-SHA256: `info` names
 * the purpose, so keys derived for different ones are unrelated. Changing `info` or `salt` changes
 * the key, and with it every link or record made under the old one.
 */
export function derivedKey(masterKeyBase64: string, info: string, salt = ''): KeyObject {
  return secretKeyOf(Buffer.from(hkdfSync('sha256', Buffer.from(masterKeyBase64, 'base64'), salt, info, 32)));
}

/**
 * A tenant's search-index key: HKDF-SHA256 of its fingerprint key, for the purpose of blind
 * indexes and bound to the tenant, so a search index never equals a fingerprint of the same text.
 */
export function searchKeyOf(fingerprintKey: Buffer, tenantId: string): KeyObject {
  return secretKeyOf(
    Buffer.from(hkdfSync('sha256', fingerprintKey, tenantId, 'tokenvault search index v1', 32)),
  );
}

const version = 'v1';
const ivLength = 12;
const tagLength = 16;

/** AES-256-GCM; the result is `v1.<base64(iv | tag | ciphertext)>`. */
export function seal(key: KeyObject, plaintext: Buffer, associatedData: string): string {
  const iv = randomBytes(ivLength);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(associatedData, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return `${version}.${Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64')}`;
}

export class DecryptionError extends Error {
  constructor() {
    super('ciphertext cannot be decrypted with this key and associated data');
    this.name = 'DecryptionError';
  }
}

export function open(key: KeyObject, sealed: string, associatedData: string): Buffer {
  const [prefix, body] = sealed.split('.', 2);
  if (prefix !== version || body === undefined) throw new DecryptionError();
  const bytes = Buffer.from(body, 'base64');
  if (bytes.length < ivLength + tagLength) throw new DecryptionError();
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, ivLength));
    decipher.setAAD(Buffer.from(associatedData, 'utf8'));
    decipher.setAuthTag(bytes.subarray(ivLength, ivLength + tagLength));
    return Buffer.concat([decipher.update(bytes.subarray(ivLength + tagLength)), decipher.final()]);
  } catch {
    throw new DecryptionError();
  }
}

/** JSON with object keys sorted at every level: equal values give equal text. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, item]) => item !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

export function hmac(key: KeyObject, text: string): string {
  return createHmac('sha256', key).update(text, 'utf8').digest('base64url');
}
