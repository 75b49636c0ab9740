import type { KeyObject } from 'node:crypto';
import type { Queryable } from '@tokenvault/platform';
import type { EventStore, Position, RecordedEvent } from '@tokenvault/eventstore';
import { eventHashOf } from './canonical.ts';
import { merkleRoot } from './merkle.ts';
import { genesisHash, treeHeadHashOf, verifyTreeHeadSignature, type TreeHead } from './tree-head.ts';
import { readTreeHeads } from './postgres/read-tree-heads.ts';
import { readTreeLeaves, type TreeLeafRow } from './postgres/read-tree-leaves.ts';
import { findTreeLeaf } from './postgres/find-tree-leaf.ts';
import { readTreeHeadTotals } from './postgres/tree-head-totals.ts';

/** A tree head the verifier starts from instead of the first event: its number and hash, known good. */
export interface TrustedTreeHead {
  number: number;
  tree_head_hash: string;
}

export type LogProblem = 'altered' | 'deleted' | 'inserted' | 'reordered' | 'tree-head';

export interface LogVerification {
  ok: boolean;
  /** Tree heads and events checked (up to the problem, when there is one). */
  treeHeads: number;
  events: number;
  /** Events after the last tree head: not covered yet, so not checked. */
  uncovered: number;
  /** The last tree head that held. */
  lastGoodTreeHead?: TrustedTreeHead;
  problem?: {
    kind: LogProblem;
    /** The first event that no longer matches (absent when a tree head itself does not). */
    event?: { event_id: string; global_position: string };
    /** The tree head that no longer matches. */
    treeHead: TrustedTreeHead;
    message: string;
  };
}

export interface VerifyLogOptions {
  /** The events, read through the event store port (either store). */
  store: EventStore;
  /** The tree heads' database. */
  db: Queryable;
  from?: TrustedTreeHead;
  /** When given, every tree head must carry a valid signature by this key. */
  publicKey?: KeyObject;
  pageSize?: number;
  onProgress?: (progress: {
    events: number;
    treeHeads: number;
    totalEvents: number;
    totalTreeHeads: number;
  }) => void;
}

const samePosition = (a: Position, b: Position) => a.commit === b.commit && a.prepare === b.prepare;

/** Events of the port's ordered read, a page ahead. */
class EventCursor {
  private page: RecordedEvent[] = [];
  private index = 0;
  private after: Position | undefined;
  private ahead: Promise<RecordedEvent[]> | undefined;
  private done = false;
  private readonly store: EventStore;
  private readonly pageSize: number;
  constructor(store: EventStore, after: Position | undefined, pageSize: number) {
    this.store = store;
    this.after = after;
    this.pageSize = pageSize;
  }

  private fetch(): Promise<RecordedEvent[]> {
    return this.store.readAll({ ...(this.after ? { after: this.after } : {}), limit: this.pageSize });
  }

  async next(): Promise<RecordedEvent | undefined> {
    if (this.index < this.page.length) return this.page[this.index++];
    if (this.done) return undefined;
    this.page = await (this.ahead ?? this.fetch());
    this.ahead = undefined;
    this.index = 0;
    const last = this.page.at(-1);
    if (!last) {
      this.done = true;
      return undefined;
    }
    this.after = last.position;
    if (this.page.length === this.pageSize) this.ahead = this.fetch();
    else this.done = true;
    return this.page[this.index++];
  }
}

/** A paged reader of anything keyed by where the last page ended, a page ahead. */
class PagedCursor<T> {
  private page: T[] = [];
  private index = 0;
  private done = false;
  private ahead: Promise<T[]> | undefined;
  private readonly read: (last: T | undefined) => Promise<T[]>;
  private readonly pageSize: number;
  constructor(read: (last: T | undefined) => Promise<T[]>, pageSize: number) {
    this.read = read;
    this.pageSize = pageSize;
  }

  async next(): Promise<T | undefined> {
    if (this.index < this.page.length) return this.page[this.index++];
    if (this.done) return undefined;
    this.page = await (this.ahead ?? this.read(this.page.at(-1)));
    this.ahead = undefined;
    this.index = 0;
    if (this.page.length < this.pageSize) this.done = true;
    else this.ahead = this.read(this.page.at(-1));
    return this.page[this.index++];
  }
}

const describeTreeHead = (head: Pick<TreeHead, 'number' | 'tree_head_hash'>): TrustedTreeHead => ({
  number: head.number,
  tree_head_hash: head.tree_head_hash,
});

/**
 * Recomputes the chain: each tree head's hash, its link to the previous one, its signature, and
 * the Merkle root of the events the port reads in its range, event by event against the hashes
 * its leaves hold. Stops at the first event or tree head that no longer matches and names it.
 */
export async function verifyLog(options: VerifyLogOptions): Promise<LogVerification> {
  const { db, store } = options;
  const pageSize = options.pageSize ?? 5_000;
  let previous: TrustedTreeHead = { number: 0, tree_head_hash: genesisHash };
  let after: Position | undefined;
  const result: LogVerification = { ok: true, treeHeads: 0, events: 0, uncovered: 0 };
  const fail = (problem: NonNullable<LogVerification['problem']>): LogVerification => ({
    ...result,
    ok: false,
    problem,
  });

  if (options.from) {
    const [trusted] = await readTreeHeads(db, options.from.number, 1);
    if (!trusted || trusted.number !== options.from.number) {
      return fail({
        kind: 'tree-head',
        treeHead: options.from,
        message: `the trusted tree head ${options.from.number} is missing`,
      });
    }
    if (
      treeHeadHashOf(trusted) !== options.from.tree_head_hash ||
      trusted.tree_head_hash !== options.from.tree_head_hash
    ) {
      return fail({
        kind: 'tree-head',
        treeHead: options.from,
        message: `tree head ${trusted.number} no longer has the trusted hash ${options.from.tree_head_hash}`,
      });
    }
    previous = describeTreeHead(trusted);
    after = trusted.last_position;
    result.lastGoodTreeHead = previous;
  }

  const totals = await readTreeHeadTotals(db, previous.number + 1);
  const events = new EventCursor(store, after, pageSize);
  const treeHeads = new PagedCursor<TreeHead>(
    (last) => readTreeHeads(db, (last?.number ?? previous.number) + 1, 1_000),
    1_000,
  );
  // After the last leaf of the tree head verified so far: the next tree head's first.
  const startLeaves = { treeHead: previous.number, index: 2 ** 31 - 1 };
  const leaves = new PagedCursor<TreeLeafRow>(
    (last) =>
      readTreeLeaves(
        db,
        last ? { treeHead: last.tree_head_number, index: last.leaf_index } : startLeaves,
        pageSize,
      ),
    pageSize,
  );

  for (let head = await treeHeads.next(); head; head = await treeHeads.next()) {
    const headRef = describeTreeHead(head);
    if (head.number !== previous.number + 1) {
      return fail({
        kind: 'tree-head',
        treeHead: headRef,
        message: `tree head ${previous.number + 1} is missing`,
      });
    }
    if (treeHeadHashOf(head) !== head.tree_head_hash) {
      return fail({
        kind: 'tree-head',
        treeHead: headRef,
        message: `tree head ${head.number} no longer matches its own hash`,
      });
    }
    if (head.previous_hash !== previous.tree_head_hash) {
      return fail({
        kind: 'tree-head',
        treeHead: headRef,
        message: `tree head ${head.number} no longer links to tree head ${previous.number} (its previous_hash differs)`,
      });
    }
    if (options.publicKey) {
      if (!head.signature || !verifyTreeHeadSignature(head, head.signature, options.publicKey)) {
        return fail({
          kind: 'tree-head',
          treeHead: headRef,
          message: `tree head ${head.number} has no valid signature by the given key`,
        });
      }
    }
    const hashes: Buffer[] = [];
    for (let index = 0; index < head.event_count; index++) {
      const leaf = await leaves.next();
      if (!leaf || leaf.tree_head_number !== head.number || leaf.leaf_index !== index) {
        return fail({
          kind: 'tree-head',
          treeHead: headRef,
          message: `tree head ${head.number} no longer has the hash of its event ${index + 1} of ${head.event_count}`,
        });
      }
      const event = await events.next();
      const hash = event && event.event_id === leaf.event_id ? eventHashOf(event) : undefined;
      if (!event || !hash || !samePosition(event.position, leaf.position) || !hash.equals(leaf.event_hash)) {
        return fail(await diagnose(db, events, headRef, leaf, event));
      }
      hashes.push(hash);
      result.events++;
    }
    if (merkleRoot(hashes).toString('hex') !== head.merkle_root) {
      return fail({
        kind: 'tree-head',
        treeHead: headRef,
        message: `tree head ${head.number} no longer matches: its Merkle root differs from its events' hashes`,
      });
    }
    previous = headRef;
    result.treeHeads++;
    result.lastGoodTreeHead = headRef;
    options.onProgress?.({
      events: result.events,
      treeHeads: result.treeHeads,
      totalEvents: totals.events,
      totalTreeHeads: totals.treeHeads,
    });
  }
  while (await events.next()) result.uncovered++;
  return result;
}

/** The first mismatch: which event, and what became of it. */
async function diagnose(
  db: Queryable,
  events: EventCursor,
  treeHead: TrustedTreeHead,
  leaf: TreeLeafRow,
  event: RecordedEvent | undefined,
): Promise<NonNullable<LogVerification['problem']>> {
  const covered = { event_id: leaf.event_id, global_position: leaf.position.prepare };
  const where = `tree head ${treeHead.number} no longer matches`;
  if (event?.event_id === leaf.event_id) {
    if (!samePosition(event.position, leaf.position)) {
      return {
        kind: 'reordered',
        event: covered,
        treeHead,
        message: `event ${leaf.event_id} at global position ${leaf.position.prepare} was moved to ${event.position.prepare}; ${where}`,
      };
    }
    return {
      kind: 'altered',
      event: covered,
      treeHead,
      message: `event ${leaf.event_id} at global position ${leaf.position.prepare} was altered; ${where}`,
    };
  }
  if (event && !(await findTreeLeaf(db, event.event_id))) {
    return {
      kind: 'inserted',
      event: { event_id: event.event_id, global_position: event.position.prepare },
      treeHead,
      message: `event ${event.event_id} at global position ${event.position.prepare} was inserted (no tree head ever covered it); ${where}`,
    };
  }
  // Another covered event stands in this one's place: it is either further on, or gone.
  for (let later = await events.next(); later; later = await events.next()) {
    if (later.event_id !== leaf.event_id) continue;
    return {
      kind: 'reordered',
      event: covered,
      treeHead,
      message: `event ${leaf.event_id} at global position ${leaf.position.prepare} was reordered: event ${event!.event_id} comes in its place and it comes later, at ${later.position.prepare}; ${where}`,
    };
  }
  return {
    kind: 'deleted',
    event: covered,
    treeHead,
    message: `event ${leaf.event_id} at global position ${leaf.position.prepare} was deleted; ${where}`,
  };
}
