/**
 * Offline check of a log proof (GET /logs/{id}/proof), with Web Crypto only: the event's hash is
 * recomputed from the event as logged, the Merkle path leads to the tree head's root, the tree
 * head's hash is recomputed, and, when a public key is given (GET /.well-known/tokenvault-log-key),
 * its Ed25519 signature is checked. The encoding is docs/verifiable-log.md's: canonical JSON
 * (RFC 8785) and RFC 9162 Merkle trees.
 */

export interface LogProofPosition {
  commit: string;
  prepare: string;
}

export interface LogProofTreeHead {
  number: number;
  previous_hash: string;
  first_position: LogProofPosition;
  last_position: LogProofPosition;
  event_count: number;
  merkle_root: string;
  signed_at: string;
  tree_head_hash: string;
  signature?: string;
  key_id?: string;
}

export interface LogProofDocument {
  log_id: string;
  event: {
    event_id: string;
    stream: string;
    revision: number;
    type: string;
    data_sha256: string;
    metadata: Record<string, unknown>;
    created_at: string;
  };
  event_hash: string;
  global_position: string;
  leaf_index: number;
  merkle_path: string[];
  tree_head: LogProofTreeHead;
}

export type LogProofCheck = { valid: true } | { valid: false; reason: string };

/** Canonical JSON (RFC 8785) of plain JSON values: keys sorted by UTF-16 code units, no spaces. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError('canonical JSON has no non-finite numbers');
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) {
    return `[${value.map((item: unknown) => (item === undefined ? 'null' : canonicalJson(item))).join(',')}]`;
  }
  if (typeof value === 'object') {
    const record = value as Record<string, unknown>;
    const parts: string[] = [];
    for (const key of Object.keys(record).sort()) {
      if (record[key] === undefined) continue;
      parts.push(`${JSON.stringify(key)}:${canonicalJson(record[key])}`);
    }
    return `{${parts.join(',')}}`;
  }
  throw new TypeError(`canonical JSON has no ${typeof value}`);
}

const encoder = new TextEncoder();

const toHex = (bytes: Uint8Array): string =>
  Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');

function fromHex(hex: string): Uint8Array {
  if (!/^([0-9a-f]{2})*$/.test(hex)) throw new TypeError('not lower-case hex');
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return bytes;
}

function fromBase64(base64: string): Uint8Array {
  const binary = atob(base64);
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

async function sha256(...parts: Uint8Array[]): Promise<Uint8Array> {
  const joined = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const part of parts) {
    joined.set(part, offset);
    offset += part.length;
  }
  return new Uint8Array(await crypto.subtle.digest('SHA-256', joined));
}

const leafPrefix = new Uint8Array([0]);
const nodePrefix = new Uint8Array([1]);

/** The event's hash: SHA-256(0x00 || canonical JSON of the event as logged). */
export async function logEventHash(event: LogProofDocument['event']): Promise<string> {
  const encoding = {
    event_id: event.event_id,
    stream: event.stream,
    revision: event.revision,
    type: event.type,
    data_sha256: event.data_sha256,
    metadata: event.metadata,
    created_at: event.created_at,
  };
  return toHex(await sha256(leafPrefix, encoder.encode(canonicalJson(encoding))));
}

/**
 * The canonical JSON a tree head's hash and signature cover. The time is under the key
 * `sealed_at`, the one the chain was first written with, so that every tree head keeps its hash
 * (docs/verifiable-log.md).
 */
export function logTreeHeadEncoding(treeHead: LogProofTreeHead): string {
  return canonicalJson({
    number: treeHead.number,
    previous_hash: treeHead.previous_hash,
    first_position: { commit: treeHead.first_position.commit, prepare: treeHead.first_position.prepare },
    last_position: { commit: treeHead.last_position.commit, prepare: treeHead.last_position.prepare },
    event_count: treeHead.event_count,
    merkle_root: treeHead.merkle_root,
    sealed_at: treeHead.signed_at,
  });
}

/** RFC 9162 section 2.1.3.2: the root the inclusion path leads to, or undefined when it cannot. */
async function rootFromPath(
  leaf: Uint8Array,
  index: number,
  treeSize: number,
  path: readonly Uint8Array[],
): Promise<Uint8Array | undefined> {
  if (!Number.isInteger(index) || index < 0 || index >= treeSize) return undefined;
  let fn = index;
  let sn = treeSize - 1;
  let r = leaf;
  for (const p of path) {
    if (sn === 0) return undefined;
    if (fn % 2 === 1 || fn === sn) {
      r = await sha256(nodePrefix, p, r);
      while (fn % 2 === 0 && fn !== 0) {
        fn = Math.floor(fn / 2);
        sn = Math.floor(sn / 2);
      }
    } else {
      r = await sha256(nodePrefix, r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 ? r : undefined;
}

/**
 * Checks a proof. `publicKey`: the raw Ed25519 public key, base64 (`public_key` of
 * GET /.well-known/tokenvault-log-key); when given, the tree head must carry its valid signature.
 */
export async function verifyLogProof(
  proof: LogProofDocument,
  options: { publicKey?: string } = {},
): Promise<LogProofCheck> {
  try {
    const eventHash = await logEventHash(proof.event);
    if (eventHash !== proof.event_hash) return { valid: false, reason: 'the event does not match its hash' };
    const root = await rootFromPath(
      fromHex(eventHash),
      proof.leaf_index,
      proof.tree_head.event_count,
      proof.merkle_path.map(fromHex),
    );
    if (!root || toHex(root) !== proof.tree_head.merkle_root) {
      return { valid: false, reason: 'the Merkle path does not lead to the tree head’s root' };
    }
    const treeHeadEncoding = encoder.encode(logTreeHeadEncoding(proof.tree_head));
    if (toHex(await sha256(treeHeadEncoding)) !== proof.tree_head.tree_head_hash) {
      return { valid: false, reason: 'the tree head does not match its hash' };
    }
    if (options.publicKey !== undefined) {
      if (!proof.tree_head.signature) return { valid: false, reason: 'the tree head is not signed' };
      const key = await crypto.subtle.importKey(
        'raw',
        fromBase64(options.publicKey),
        { name: 'Ed25519' },
        false,
        ['verify'],
      );
      const signed = await crypto.subtle.verify(
        'Ed25519',
        key,
        fromBase64(proof.tree_head.signature),
        treeHeadEncoding,
      );
      if (!signed) return { valid: false, reason: 'the tree head’s signature does not verify with the key' };
    }
    return { valid: true };
  } catch {
    return { valid: false, reason: 'the proof is malformed' };
  }
}
