import { createHash, generateKeyPairSync, randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { recordedEvent } from '@tokenvault/cqrs/testing';
import { logTreeHeadEncoding, verifyLogProof, type LogProofDocument } from '@tokenvault/sdk';
import { canonicalJson, eventHashOf, leafHashOf, loggedEncodingOf } from './canonical.ts';
import { inclusionPath, merkleRoot, verifyInclusion } from './merkle.ts';
import {
  LogSigningKey,
  publicKeyFrom,
  treeHeadEncodingOf,
  treeHeadHashOf,
  verifyTreeHeadSignature,
  type TreeHeadContent,
} from './tree-head.ts';
import { nextTreeHead } from './tree-head-signer.ts';

const hash = (...parts: Buffer[]) => createHash('sha256').update(Buffer.concat(parts)).digest();
const leaf = (i: number) => hash(Buffer.from([0]), Buffer.from(`leaf ${i}`));

/** RFC 9162's definition, recursive, as written there. */
function referenceRoot(leaves: Buffer[]): Buffer {
  if (leaves.length === 1) return leaves[0]!;
  let k = 1;
  while (k * 2 < leaves.length) k *= 2;
  return hash(Buffer.from([1]), referenceRoot(leaves.slice(0, k)), referenceRoot(leaves.slice(k)));
}

describe('canonical JSON (RFC 8785)', () => {
  it('sorts keys at every depth, drops undefined members and writes no whitespace', () => {
    expect(canonicalJson({ b: [3, { z: 1, a: 'x' }], a: null, c: undefined, é: true, A: 1.5 })).toBe(
      '{"A":1.5,"a":null,"b":[3,{"a":"x","z":1}],"é":true}',
    );
  });

  it('gives the same bytes whatever the key order an adapter returns', () => {
    expect(canonicalJson({ x: { b: 1, a: 2 }, y: 'q"\n' })).toBe(
      canonicalJson({ y: 'q"\n', x: { a: 2, b: 1 } }),
    );
  });

  it('refuses what JSON cannot hold', () => {
    expect(() => canonicalJson({ n: Number.NaN })).toThrow(/non-finite/);
    expect(() => canonicalJson({ f: () => 1 })).toThrow(/function/);
  });
});

describe('the logged encoding of an event', () => {
  it('holds the data only as its hash, and every other field as is', () => {
    const event = recordedEvent('TokenCreated', { data_ciphertext: 'v1.abc', tenant_id: randomUUID() });
    const encoding = loggedEncodingOf(event);
    expect(encoding).toEqual({
      event_id: event.event_id,
      stream: event.stream,
      revision: 0,
      type: 'TokenCreated',
      data_sha256: createHash('sha256').update(canonicalJson(event.data)).digest('hex'),
      metadata: event.metadata,
      created_at: event.created_at.toISOString(),
    });
    expect(JSON.stringify(encoding)).not.toContain('v1.abc');
  });

  it('hashes to the leaf of its encoding, whatever the strings hold', () => {
    for (const stream of ['plain', 'quote " and \\ backslash', 'ünïcödé ✓ 𝄞', 'line\nbreak\u0001']) {
      const event = recordedEvent(
        'TokenCreated',
        { z: [1, 'x', null, { b: 2, a: 1 }], a: stream },
        { stream },
      );
      expect(eventHashOf(event).equals(leafHashOf(loggedEncodingOf(event)))).toBe(true);
    }
  });

  it('changes with any one field', () => {
    const event = recordedEvent('TokenCreated', { a: 1 }, { metadata: { actor_id: randomUUID() } });
    const original = eventHashOf(event).toString('hex');
    const variants = [
      { ...event, data: { a: 2 } },
      { ...event, event_id: randomUUID() },
      { ...event, stream: `${event.stream}x` },
      { ...event, revision: 1 },
      { ...event, type: 'TokenDeleted' },
      { ...event, metadata: { ...event.metadata, actor_id: randomUUID() } },
      { ...event, created_at: new Date(event.created_at.getTime() + 1) },
    ];
    for (const variant of variants) expect(eventHashOf(variant).toString('hex')).not.toBe(original);
    // The position is not part of it: the tree head holds where the batch starts and ends.
    expect(eventHashOf({ ...event, position: { commit: '9', prepare: '9' } }).toString('hex')).toBe(original);
  });
});

describe('the Merkle tree (RFC 9162)', () => {
  it('has the root of the RFC definition, and an inclusion path for every leaf of every size', () => {
    for (let size = 1; size <= 33; size++) {
      const leaves = Array.from({ length: size }, (_, i) => leaf(i));
      const root = merkleRoot(leaves);
      expect(root.equals(referenceRoot(leaves))).toBe(true);
      for (let index = 0; index < size; index++) {
        const path = inclusionPath(leaves, index);
        expect(verifyInclusion(leaves[index]!, index, size, path, root)).toBe(true);
        expect(verifyInclusion(leaf(1000), index, size, path, root)).toBe(false);
        if (size > 1)
          expect(verifyInclusion(leaves[index]!, (index + 1) % size, size, path, root)).toBe(false);
      }
    }
  });

  it('changes when two leaves swap', () => {
    const leaves = [leaf(0), leaf(1), leaf(2)];
    expect(merkleRoot(leaves).equals(merkleRoot([leaf(1), leaf(0), leaf(2)]))).toBe(false);
  });
});

describe('tree heads', () => {
  const events = Array.from({ length: 5 }, (_, i) => recordedEvent('TokenCreated', { i }));
  const signingKey = new LogSigningKey(Buffer.alloc(32, 7).toString('base64'));

  it('chain: the first links to the genesis hash, the next to the first', () => {
    const first = nextTreeHead(events.slice(0, 3), undefined, new Date(0)).treeHead;
    const second = nextTreeHead(events.slice(3), first, new Date(1)).treeHead;
    expect(first).toMatchObject({ number: 1, previous_hash: '0'.repeat(64), event_count: 3 });
    expect(first.first_position).toEqual(events[0]!.position);
    expect(first.last_position).toEqual(events[2]!.position);
    expect(second).toMatchObject({ number: 2, previous_hash: first.tree_head_hash, event_count: 2 });
    expect(treeHeadHashOf(second)).toBe(second.tree_head_hash);
    expect(treeHeadHashOf({ ...second, event_count: 3 })).not.toBe(second.tree_head_hash);
  });

  it('hash and sign the bytes the chain was first written with, here and in the SDK', () => {
    const content: TreeHeadContent = {
      number: 12,
      previous_hash: 'c'.repeat(64),
      first_position: { commit: '901', prepare: '35' },
      last_position: { commit: '904', prepare: '41' },
      event_count: 7,
      merkle_root: 'd'.repeat(64),
      signed_at: '2026-11-24T10:00:00.000Z',
    };
    // The time keeps its first key, `sealed_at`: tree heads already written keep their hashes.
    const encoding =
      '{"event_count":7,"first_position":{"commit":"901","prepare":"35"},' +
      '"last_position":{"commit":"904","prepare":"41"},' +
      `"merkle_root":"${'d'.repeat(64)}","number":12,"previous_hash":"${'c'.repeat(64)}",` +
      '"sealed_at":"2026-11-24T10:00:00.000Z"}';
    expect(treeHeadEncodingOf(content)).toBe(encoding);
    expect(logTreeHeadEncoding({ ...content, tree_head_hash: '' })).toBe(encoding);
    expect(treeHeadHashOf(content)).toBe(createHash('sha256').update(encoding).digest('hex'));
  });

  it('are signed with Ed25519 when a key is configured, and the signature covers every field', () => {
    const { treeHead } = nextTreeHead(events, undefined, new Date(0), signingKey);
    expect(treeHead.key_id).toBe(signingKey.keyId);
    expect(verifyTreeHeadSignature(treeHead, treeHead.signature!, signingKey.publicKey)).toBe(true);
    expect(
      verifyTreeHeadSignature(
        { ...treeHead, merkle_root: '0'.repeat(64) },
        treeHead.signature!,
        signingKey.publicKey,
      ),
    ).toBe(false);
    const other = generateKeyPairSync('ed25519').publicKey;
    expect(verifyTreeHeadSignature(treeHead, treeHead.signature!, other)).toBe(false);
    const published = publicKeyFrom(signingKey.describe().public_key);
    expect(verifyTreeHeadSignature(treeHead, treeHead.signature!, published)).toBe(true);
    expect(JSON.stringify(signingKey.describe())).not.toContain(Buffer.alloc(32, 7).toString('base64'));
  });

  it('accept a PKCS#8 key as well as a seed, and refuse a key that is not Ed25519', () => {
    const { privateKey } = generateKeyPairSync('ed25519');
    const pkcs8 = privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64');
    expect(new LogSigningKey(pkcs8).keyId).toMatch(/^[0-9a-f]{16}$/);
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey;
    expect(
      () => new LogSigningKey(rsa.export({ format: 'der', type: 'pkcs8' }).toString('base64')),
    ).toThrow();
  });
});

describe('the SDK verifier on a proof built here', () => {
  const signingKey = new LogSigningKey(Buffer.alloc(32, 9).toString('base64'));
  const events = Array.from({ length: 7 }, (_, i) =>
    recordedEvent(
      'TokenCreated',
      { i, data_ciphertext: `v1.secret-${i}` },
      { metadata: { actor_id: randomUUID() } },
    ),
  );
  const { treeHead, hashes } = nextTreeHead(events, undefined, new Date(0), signingKey);
  const proofOf = (index: number): LogProofDocument => ({
    log_id: '1',
    event: { ...loggedEncodingOf(events[index]!), metadata: { ...events[index]!.metadata } },
    event_hash: hashes[index]!.toString('hex'),
    global_position: events[index]!.position.prepare,
    leaf_index: index,
    merkle_path: inclusionPath(hashes, index).map((h) => h.toString('hex')),
    tree_head: treeHead,
  });
  const publicKey = signingKey.describe().public_key;

  it('accepts the proof of every leaf, signed', async () => {
    for (let index = 0; index < events.length; index++) {
      expect(await verifyLogProof(proofOf(index), { publicKey })).toEqual({ valid: true });
    }
  });

  it('refuses a proof with any part altered', async () => {
    const proof = proofOf(3);
    const altered: LogProofDocument[] = [
      { ...proof, event: { ...proof.event, type: 'TokenDeleted' } },
      { ...proof, event: { ...proof.event, data_sha256: 'f'.repeat(64) } },
      { ...proof, event_hash: hashes[2]!.toString('hex') },
      { ...proof, leaf_index: 2 },
      { ...proof, merkle_path: proof.merkle_path.slice(1) },
      { ...proof, tree_head: { ...proof.tree_head, number: 2 } },
      { ...proof, tree_head: { ...proof.tree_head, merkle_root: 'a'.repeat(64) } },
    ];
    for (const bad of altered) expect((await verifyLogProof(bad)).valid).toBe(false);
    const otherKey = new LogSigningKey(Buffer.alloc(32, 1).toString('base64')).describe().public_key;
    expect(await verifyLogProof(proof, { publicKey: otherKey })).toMatchObject({ valid: false });
    const { signature: _signature, ...unsigned } = proof.tree_head;
    expect(await verifyLogProof({ ...proof, tree_head: unsigned }, { publicKey })).toMatchObject({
      valid: false,
      reason: 'the tree head is not signed',
    });
  });

  it('shows no other event’s data, only their hashes', () => {
    const text = JSON.stringify(proofOf(3));
    for (const [index, event] of events.entries()) {
      if (index === 3) continue;
      expect(text).not.toContain(event.event_id);
    }
    expect(text).not.toContain('secret');
  });
});
