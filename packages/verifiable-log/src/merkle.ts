import { hash } from 'node:crypto';

/**
 * The Merkle tree of RFC 9162 (Certificate Transparency v2), section 2.1.1: a node is
 * SHA-256(0x01 || left || right), a tree of n leaves splits at the largest power of two below n.
 * Leaves are already hashed (canonical.ts: SHA-256(0x00 || encoding)).
 */
const nodePrefix = Buffer.from([1]);

// One-shot hash: verify-log computes one node per event.
const nodeHash = (left: Buffer, right: Buffer): Buffer =>
  hash('sha256', Buffer.concat([nodePrefix, left, right], 65), 'buffer');

const splitOf = (n: number): number => {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
};

/** The root over leaf hashes; a batch is never empty. */
export function merkleRoot(leaves: readonly Buffer[]): Buffer {
  if (leaves.length === 0) throw new RangeError('a Merkle tree needs at least one leaf');
  // Bottom-up, which gives RFC 9162's tree: an odd last node is carried up unchanged.
  let level: Buffer[] = [...leaves];
  while (level.length > 1) {
    const next: Buffer[] = [];
    for (let i = 0; i + 1 < level.length; i += 2) next.push(nodeHash(level[i]!, level[i + 1]!));
    if (level.length % 2 === 1) next.push(level.at(-1)!);
    level = next;
  }
  return level[0]!;
}

/** RFC 9162's inclusion proof (audit path) of leaf `index`: the sibling hashes, leaf to root. */
export function inclusionPath(leaves: readonly Buffer[], index: number): Buffer[] {
  if (!Number.isInteger(index) || index < 0 || index >= leaves.length) throw new RangeError('no such leaf');
  if (leaves.length === 1) return [];
  const k = splitOf(leaves.length);
  return index < k
    ? [...inclusionPath(leaves.slice(0, k), index), merkleRoot(leaves.slice(k))]
    : [...inclusionPath(leaves.slice(k), index - k), merkleRoot(leaves.slice(0, k))];
}

/** RFC 9162 section 2.1.3.2: whether the path leads from the leaf to the root. */
export function verifyInclusion(
  leaf: Buffer,
  index: number,
  treeSize: number,
  path: readonly Buffer[],
  root: Buffer,
): boolean {
  if (!Number.isInteger(index) || index < 0 || index >= treeSize) return false;
  let fn = index;
  let sn = treeSize - 1;
  let r = leaf;
  for (const p of path) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      r = nodeHash(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && r.equals(root);
}
