import type { KeyObject } from 'node:crypto';
import type { Queryable } from '@tokenvault/platform';
import type { EventStore, Position, RecordedEvent } from '@tokenvault/eventstore';
import { eventHashOf } from './canonical.ts';
import { merkleRoot } from './merkle.ts';
import { genesisHash, sealHashOf, verifySealSignature, type Seal } from './seal.ts';
import { readSeals } from './postgres/read-seals.ts';
import { readSealedEvents, type SealedEventRow } from './postgres/read-sealed-events.ts';
import { findSealedEvent } from './postgres/find-sealed-event.ts';
import { readSealedTotals } from './postgres/sealed-totals.ts';

/** A seal the verifier starts from instead of the first event: its number and hash, known good. */
export interface TrustedSeal {
  number: number;
  seal_hash: string;
}

export type LogProblem = 'altered' | 'deleted' | 'inserted' | 'reordered' | 'seal';

export interface LogVerification {
  ok: boolean;
  /** Seals and events checked (up to the problem, when there is one). */
  seals: number;
  events: number;
  /** Events after the last seal: not sealed yet, so not checked. */
  unsealed: number;
  /** The last seal that held. */
  lastGoodSeal?: TrustedSeal;
  problem?: {
    kind: LogProblem;
    /** The first event that no longer matches (absent when a seal itself does not). */
    event?: { event_id: string; global_position: string };
    /** The seal that no longer matches. */
    seal: TrustedSeal;
    message: string;
  };
}

export interface VerifyLogOptions {
  /** The events, read through the event store port (either store). */
  store: EventStore;
  /** The seals' database. */
  db: Queryable;
  from?: TrustedSeal;
  /** When given, every seal must carry a valid signature by this key. */
  publicKey?: KeyObject;
  pageSize?: number;
  onProgress?: (progress: { events: number; seals: number; totalEvents: number; totalSeals: number }) => void;
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

const describeSeal = (seal: Pick<Seal, 'number' | 'seal_hash'>): TrustedSeal => ({
  number: seal.number,
  seal_hash: seal.seal_hash,
});

/**
 * Recomputes the chain: each seal's hash, its link to the previous one, its signature, and the
 * Merkle root of the events the port reads in its range, event by event against the hashes
 * sealed. Stops at the first event or seal that no longer matches and names it.
 */
export async function verifyLog(options: VerifyLogOptions): Promise<LogVerification> {
  const { db, store } = options;
  const pageSize = options.pageSize ?? 5_000;
  let previous: TrustedSeal = { number: 0, seal_hash: genesisHash };
  let after: Position | undefined;
  const result: LogVerification = { ok: true, seals: 0, events: 0, unsealed: 0 };
  const fail = (problem: NonNullable<LogVerification['problem']>): LogVerification => ({
    ...result,
    ok: false,
    problem,
  });

  if (options.from) {
    const [trusted] = await readSeals(db, options.from.number, 1);
    if (!trusted || trusted.number !== options.from.number) {
      return fail({
        kind: 'seal',
        seal: options.from,
        message: `the trusted seal ${options.from.number} is missing`,
      });
    }
    if (sealHashOf(trusted) !== options.from.seal_hash || trusted.seal_hash !== options.from.seal_hash) {
      return fail({
        kind: 'seal',
        seal: options.from,
        message: `seal ${trusted.number} no longer has the trusted hash ${options.from.seal_hash}`,
      });
    }
    previous = describeSeal(trusted);
    after = trusted.last_position;
    result.lastGoodSeal = previous;
  }

  const totals = await readSealedTotals(db, previous.number + 1);
  const events = new EventCursor(store, after, pageSize);
  const seals = new PagedCursor<Seal>(
    (last) => readSeals(db, (last?.number ?? previous.number) + 1, 1_000),
    1_000,
  );
  // After the last leaf of the seal verified so far: the next seal's first.
  const startLeaves = { seal: previous.number, index: 2 ** 31 - 1 };
  const leaves = new PagedCursor<SealedEventRow>(
    (last) =>
      readSealedEvents(db, last ? { seal: last.seal_number, index: last.leaf_index } : startLeaves, pageSize),
    pageSize,
  );

  for (let seal = await seals.next(); seal; seal = await seals.next()) {
    const sealRef = describeSeal(seal);
    if (seal.number !== previous.number + 1) {
      return fail({ kind: 'seal', seal: sealRef, message: `seal ${previous.number + 1} is missing` });
    }
    if (sealHashOf(seal) !== seal.seal_hash) {
      return fail({
        kind: 'seal',
        seal: sealRef,
        message: `seal ${seal.number} no longer matches its own hash`,
      });
    }
    if (seal.previous_hash !== previous.seal_hash) {
      return fail({
        kind: 'seal',
        seal: sealRef,
        message: `seal ${seal.number} no longer links to seal ${previous.number} (its previous_hash differs)`,
      });
    }
    if (options.publicKey) {
      if (!seal.signature || !verifySealSignature(seal, seal.signature, options.publicKey)) {
        return fail({
          kind: 'seal',
          seal: sealRef,
          message: `seal ${seal.number} has no valid signature by the given key`,
        });
      }
    }
    const hashes: Buffer[] = [];
    for (let index = 0; index < seal.event_count; index++) {
      const leaf = await leaves.next();
      if (!leaf || leaf.seal_number !== seal.number || leaf.leaf_index !== index) {
        return fail({
          kind: 'seal',
          seal: sealRef,
          message: `seal ${seal.number} no longer has the hash of its event ${index + 1} of ${seal.event_count}`,
        });
      }
      const event = await events.next();
      const hash = event && event.event_id === leaf.event_id ? eventHashOf(event) : undefined;
      if (!event || !hash || !samePosition(event.position, leaf.position) || !hash.equals(leaf.event_hash)) {
        return fail(await diagnose(db, events, sealRef, leaf, event));
      }
      hashes.push(hash);
      result.events++;
    }
    if (merkleRoot(hashes).toString('hex') !== seal.merkle_root) {
      return fail({
        kind: 'seal',
        seal: sealRef,
        message: `seal ${seal.number} no longer matches: its Merkle root differs from its events' hashes`,
      });
    }
    previous = sealRef;
    result.seals++;
    result.lastGoodSeal = sealRef;
    options.onProgress?.({
      events: result.events,
      seals: result.seals,
      totalEvents: totals.events,
      totalSeals: totals.seals,
    });
  }
  while (await events.next()) result.unsealed++;
  return result;
}

/** The first mismatch: which event, and what became of it. */
async function diagnose(
  db: Queryable,
  events: EventCursor,
  seal: TrustedSeal,
  leaf: SealedEventRow,
  event: RecordedEvent | undefined,
): Promise<NonNullable<LogVerification['problem']>> {
  const sealed = { event_id: leaf.event_id, global_position: leaf.position.prepare };
  const where = `seal ${seal.number} no longer matches`;
  if (event?.event_id === leaf.event_id) {
    if (!samePosition(event.position, leaf.position)) {
      return {
        kind: 'reordered',
        event: sealed,
        seal,
        message: `event ${leaf.event_id} at global position ${leaf.position.prepare} was moved to ${event.position.prepare}; ${where}`,
      };
    }
    return {
      kind: 'altered',
      event: sealed,
      seal,
      message: `event ${leaf.event_id} at global position ${leaf.position.prepare} was altered; ${where}`,
    };
  }
  if (event && !(await findSealedEvent(db, event.event_id))) {
    return {
      kind: 'inserted',
      event: { event_id: event.event_id, global_position: event.position.prepare },
      seal,
      message: `event ${event.event_id} at global position ${event.position.prepare} was inserted (it was never sealed); ${where}`,
    };
  }
  // Another sealed event stands in this one's place: it is either further on, or gone.
  for (let later = await events.next(); later; later = await events.next()) {
    if (later.event_id !== leaf.event_id) continue;
    return {
      kind: 'reordered',
      event: sealed,
      seal,
      message: `event ${leaf.event_id} at global position ${leaf.position.prepare} was reordered: event ${event!.event_id} comes in its place and it comes later, at ${later.position.prepare}; ${where}`,
    };
  }
  return {
    kind: 'deleted',
    event: sealed,
    seal,
    message: `event ${leaf.event_id} at global position ${leaf.position.prepare} was deleted; ${where}`,
  };
}
