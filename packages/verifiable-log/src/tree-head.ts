import { createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import type { Position } from '@tokenvault/eventstore';
import { canonicalJson, sha256 } from './canonical.ts';

/**
 * What a tree head's hash covers: its place in the chain and the batch of events it covers. A
 * tree head is RFC 9162's signed tree head (a Merkle root, signed) that also chains to the one
 * before it.
 */
export interface TreeHeadContent {
  /** 1 for the first tree head, then one more each. */
  number: number;
  /** The previous tree head's hash (hex); 64 zeros for the first. */
  previous_hash: string;
  first_position: Position;
  last_position: Position;
  event_count: number;
  /** RFC 9162 Merkle tree root over the batch's event hashes, in commit order (hex). */
  merkle_root: string;
  /** ISO 8601 with milliseconds, UTC. */
  signed_at: string;
}

export interface TreeHead extends TreeHeadContent {
  /** SHA-256 of the canonical JSON of the content (hex). */
  tree_head_hash: string;
  /** Ed25519 signature of the same canonical JSON (base64), when a signing key is configured. */
  signature?: string;
  /** Which key signed: the first 16 hex digits of SHA-256 of its raw public key. */
  key_id?: string;
}

export const genesisHash = '0'.repeat(64);

/**
 * The bytes a tree head's hash and signature cover. The time is under the key `sealed_at`, the
 * name the chain was first written with: another key would change the hash of every tree head
 * already in a deployed chain, and of those kept elsewhere as trusted `number:hash` pairs.
 */
export const treeHeadEncodingOf = (head: TreeHeadContent): string =>
  canonicalJson({
    number: head.number,
    previous_hash: head.previous_hash,
    first_position: { commit: head.first_position.commit, prepare: head.first_position.prepare },
    last_position: { commit: head.last_position.commit, prepare: head.last_position.prepare },
    event_count: head.event_count,
    merkle_root: head.merkle_root,
    sealed_at: head.signed_at,
  });

export const treeHeadHashOf = (head: TreeHeadContent): string =>
  sha256(treeHeadEncodingOf(head)).toString('hex');

/** PKCS#8 DER of an Ed25519 key is this prefix then the 32-byte seed (RFC 8410). */
const ed25519Pkcs8Prefix = Buffer.from('302e020100300506032b657004220420', 'hex');

/** The Ed25519 key of the tree heads: LOG_SIGNING_KEY, base64 of a 32-byte seed or of PKCS#8 DER. */
export class LogSigningKey {
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

  sign(head: TreeHeadContent): string {
    return sign(null, Buffer.from(treeHeadEncodingOf(head)), this.privateKey).toString('base64');
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

export function verifyTreeHeadSignature(
  head: TreeHeadContent,
  signature: string,
  publicKey: KeyObject,
): boolean {
  return verify(null, Buffer.from(treeHeadEncodingOf(head)), publicKey, Buffer.from(signature, 'base64'));
}
