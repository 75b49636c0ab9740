import { createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import type { Position } from '@tokenvault/eventstore';
import { canonicalJson, sha256 } from './canonical.ts';

/** What a seal's hash covers: its place in the chain and the batch of events it seals. */
export interface SealContent {
  /** 1 for the first seal, then one more each. */
  number: number;
  /** The previous seal's hash (hex); 64 zeros for the first. */
  previous_hash: string;
  first_position: Position;
  last_position: Position;
  event_count: number;
  /** RFC 9162 Merkle tree root over the batch's event hashes, in commit order (hex). */
  merkle_root: string;
  /** ISO 8601 with milliseconds, UTC. */
  sealed_at: string;
}

export interface Seal extends SealContent {
  /** SHA-256 of the canonical JSON of the content (hex). */
  seal_hash: string;
  /** Ed25519 signature of the same canonical JSON (base64), when a signing key is configured. */
  signature?: string;
  /** Which key signed: the first 16 hex digits of SHA-256 of its raw public key. */
  key_id?: string;
}

export const genesisHash = '0'.repeat(64);

export const sealEncodingOf = (seal: SealContent): string =>
  canonicalJson({
    number: seal.number,
    previous_hash: seal.previous_hash,
    first_position: { commit: seal.first_position.commit, prepare: seal.first_position.prepare },
    last_position: { commit: seal.last_position.commit, prepare: seal.last_position.prepare },
    event_count: seal.event_count,
    merkle_root: seal.merkle_root,
    sealed_at: seal.sealed_at,
  });

export const sealHashOf = (seal: SealContent): string => sha256(sealEncodingOf(seal)).toString('hex');

/** PKCS#8 DER of an Ed25519 key is this prefix then the 32-byte seed (RFC 8410). */
const ed25519Pkcs8Prefix = Buffer.from('302e020100300506032b657004220420', 'hex');

/** The Ed25519 key of the seals: LOG_SIGNING_KEY, base64 of a 32-byte seed or of PKCS#8 DER. */
export class SealSigner {
  private readonly privateKey: KeyObject;
  readonly publicKey: KeyObject;
  readonly keyId: string;
  constructor(base64Key: string) {
    const bytes = Buffer.from(base64Key, 'base64');
    const der = bytes.length === 32 ? Buffer.concat([ed25519Pkcs8Prefix, bytes]) : bytes;
    this.privateKey = createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
    if (this.privateKey.asymmetricKeyType !== 'ed25519')
      throw new TypeError('the log signing key is not Ed25519');
    this.publicKey = createPublicKey(this.privateKey);
    this.keyId = keyIdOf(this.publicKey);
  }

  sign(seal: SealContent): string {
    return sign(null, Buffer.from(sealEncodingOf(seal)), this.privateKey).toString('base64');
  }

  /** The shape GET /.well-known/tokenvault-log-key publishes. */
  describe() {
    return {
      algorithm: 'Ed25519' as const,
      key_id: this.keyId,
      public_key: rawPublicKeyOf(this.publicKey).toString('base64'),
      public_key_pem: this.publicKey.export({ format: 'pem', type: 'spki' }).toString(),
    };
  }
}

/** The last 32 bytes of the SPKI DER of an Ed25519 key are the raw key. */
const rawPublicKeyOf = (key: KeyObject): Buffer => key.export({ format: 'der', type: 'spki' }).subarray(-32);

export const keyIdOf = (key: KeyObject): string => sha256(rawPublicKeyOf(key)).toString('hex').slice(0, 16);

/** A public key given as base64 of the raw 32 bytes, or as PEM. */
export function publicKeyFrom(text: string): KeyObject {
  const trimmed = text.trim();
  if (trimmed.startsWith('-----BEGIN')) return createPublicKey(trimmed);
  const raw = Buffer.from(trimmed, 'base64');
  if (raw.length !== 32) throw new TypeError('an Ed25519 public key is 32 bytes (base64) or PEM');
  return createPublicKey({
    key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), raw]),
    format: 'der',
    type: 'spki',
  });
}

export function verifySealSignature(seal: SealContent, signature: string, publicKey: KeyObject): boolean {
  return verify(null, Buffer.from(sealEncodingOf(seal)), publicKey, Buffer.from(signature, 'base64'));
}
