import pg from 'pg';
import { eventStoreGroupCommitBatchesTotal } from '@tokenvault/platform';
import {
  appendedFrom,
  appendedFromBatch,
  appendLayers,
  batchAppendQuery,
  isAppendRefusal,
  streamLockNamespace,
  type Appended,
  type AppendRow,
} from './append.ts';
import type { AppendStatement } from './append.ts';
import { batchClaimQueries, claimTakenFrom } from './claims.ts';
import type { ClaimChanges } from '../port.ts';
import { sendInOneTransaction, type Settled } from './append-pipeline.ts';
import { mergedInlineStatements } from './independent-rows.ts';

export interface GroupCommitOptions {
  /** How long the first append of a batch waits for others to join it (milliseconds, at least 1). */
  windowMs: number;
  /** Most appends in one transaction: a full batch is sent without waiting out the window. */
  maxAppends: number;
}

/**
 * One append as its pipelined queries: the refusing append statement first, then its claims'
 * queries (`claimQueries` of them), then its inline projections' recorded statements.
 */
export interface PipelinedAppend {
  statement: AppendStatement;
  queries: readonly pg.QueryConfig[];
  claimQueries: number;
  /** The claim changes of its events, which `queries` hold as claim queries. */
  claims: readonly (ClaimChanges | undefined)[];
}

/**
 * A batch of appends as few statements: its appends as one multi-row statement per layer (see
 * appendLayers; one unless a stream comes twice), its claims as one (see batchClaimQueries; else each
 * append's claim queries, in batch order), then each append's inline projection statements in
 * batch order, merged where they declare they may be (mergedInlineStatements). The same writes as
 * the appends' own queries one append after another: the append statements write only es_streams
 * and es_events, which no claim or projection statement reads, and the claims and projection
 * statements keep their order among themselves.
 */
export function multiRowQueries(batch: readonly PipelinedAppend[]): {
  queries: pg.QueryConfig[];
  layers: AppendStatement[][];
} {
  const layers = appendLayers(batch.map((append) => append.statement));
  const claimQueries =
    batchClaimQueries(batch.flatMap((append) => append.claims)) ??
    batch.flatMap((append) => append.queries.slice(1, 1 + append.claimQueries));
  return {
    queries: [
      ...layers.map(batchAppendQuery),
      ...claimQueries,
      ...mergedInlineStatements(batch.map((append) => append.queries.slice(1 + append.claimQueries))),
    ],
    layers,
  };
}

/**
 * The outcome of one pipelined append from its queries' outcomes, as statement by statement: the
 * first error decides. Null when the append statement refused (a wrong expected revision),
 * UniqueClaimTaken when one of its claims did, the query's own error otherwise.
 */
export function settlePipelinedAppend(
  append: PipelinedAppend,
  outcomes: readonly Settled[],
): Appended | null {
  const failed = outcomes.findIndex((outcome) => !outcome.ok);
  const first = outcomes[failed === -1 ? 0 : failed]!;
  if (first.ok) return appendedFrom(append.statement, first.result.rows as AppendRow[]);
  if (failed === 0 && isAppendRefusal(first.error)) return null;
  throw (
    (failed <= append.claimQueries && claimTakenFrom(first.error, append.queries[failed]!)) || first.error
  );
}

/**
 * Every stream of the batch locked before the transaction writes anything, in one order for all
 * batches (by lock key): the transaction id PostgreSQL assigns at the first write is then younger
 * than that of every earlier writer of those streams, so the ordering guard of the append
 * statement never refuses an append of the batch because another append of it wrote first.
 */
const lockStreamsQuery = (streams: readonly string[]): pg.QueryConfig => ({
  name: 'es_lock_streams',
  text: `SELECT count(pg_advisory_xact_lock(${streamLockNamespace}, key)) AS locked
         FROM (SELECT DISTINCT hashtext(stream) AS key FROM unnest($1::text[]) AS s(stream) ORDER BY key) AS keys`,
  values: [streams],
});

const isDeadlock = (error: unknown) => (error as { code?: unknown } | null)?.code === '40P01';
const maxDeadlockRetries = 3;

interface Queued {
  append: PipelinedAppend;
  resolve(appended: Appended | null): void;
  reject(error: unknown): void;
}

/**
 * Group commit: the appends that arrive together share one transaction, in one round trip: first
 * as multi-row statements (multiRowQueries); when PostgreSQL rolls that back, their own queries
 * pipelined after one statement that locks their streams. The first append of a batch
 * waits at most `windowMs` for others (or until `maxAppends` have come), and one batch is in flight
 * at a time: the appends arriving meanwhile form the next. Appends of one stream in a batch run in
 * arrival order, each seeing the ones before it, as if sequential. An append that fails (a wrong
 * expected revision, a taken claim, its projection's error) fails alone: PostgreSQL rolled the
 * transaction back, so the batch is sent again without it, and then it is sent alone (two more
 * round trips per failed append; conflicts are rare). Each caller is answered after the COMMIT
 * of the transaction that stored its append returned.
 */
export class GroupCommit {
  private queue: Queued[] = [];
  private timer: NodeJS.Timeout | undefined;
  private sending = false;
  private readonly pool: pg.Pool;
  private readonly options: GroupCommitOptions;

  constructor(pool: pg.Pool, options: GroupCommitOptions) {
    if (!Number.isSafeInteger(options.windowMs) || options.windowMs < 1)
      throw new TypeError(`group commit windowMs must be a positive integer, got ${options.windowMs}`);
    if (!Number.isSafeInteger(options.maxAppends) || options.maxAppends < 1)
      throw new TypeError(`group commit maxAppends must be a positive integer, got ${options.maxAppends}`);
    this.pool = pool;
    this.options = options;
  }

  /** The append's outcome once its batch committed (null: refused, see settlePipelinedAppend). */
  append(append: PipelinedAppend): Promise<Appended | null> {
    return new Promise((resolve, reject) => {
      this.queue.push({ append, resolve, reject });
      if (this.queue.length >= this.options.maxAppends) this.send();
      else this.timer ??= setTimeout(() => this.send(), this.options.windowMs);
    });
  }

  private send(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    // The batch in flight sends the next when it is done.
    if (this.sending || this.queue.length === 0) return;
    const batch = this.queue.splice(0, this.options.maxAppends);
    this.sending = true;
    void this.commit(batch).finally(() => {
      this.sending = false;
      // What queued meanwhile has waited for a whole batch already.
      if (this.queue.length > 0) this.send();
    });
  }

  private async commit(batch: Queued[]): Promise<void> {
    if (batch.length > 1 && (await this.commitMultiRow(batch))) return;
    if (batch.length > 1) eventStoreGroupCommitBatchesTotal.inc({ statements: 'per_append' });
    const failedBesideOthers = await this.commitTogether(batch);
    // Its error may come from what only the rolled-back transaction held (a key claimed by an
    // earlier append of the batch, not committed yet). Sent again alone once the rest committed, it
    // gets the outcome it would have had after them: against committed state, as without batching.
    for (const one of failedBesideOthers) await this.commitTogether([one]);
  }

  /**
   * The batch in one transaction of multi-row statements (multiRowQueries). True when every append
   * is settled; false when PostgreSQL rolled the transaction back (a refusal, a conflict, a
   * projection's error, a deadlock): the batch then goes append by append, which finds whose it was.
   */
  private async commitMultiRow(batch: Queued[]): Promise<boolean> {
    const { queries, layers } = multiRowQueries(batch.map((one) => one.append));
    let outcomes: Settled[];
    try {
      outcomes = await sendInOneTransaction(this.pool, queries);
    } catch (error) {
      if (error instanceof pg.DatabaseError) return false;
      // The connection failed: whether it committed is unknown, so no append may be sent again.
      for (const one of batch) one.reject(error);
      return true;
    }
    const failed = outcomes.find((outcome) => !outcome.ok);
    if (failed && !failed.ok) {
      if (failed.error instanceof pg.DatabaseError) return false;
      for (const one of batch) one.reject(failed.error);
      return true;
    }
    eventStoreGroupCommitBatchesTotal.inc({ statements: 'multi_row' });
    let byStatement: Map<AppendStatement, Appended>;
    try {
      const appended = layers.flatMap((layer, index) =>
        appendedFromBatch(layer, (outcomes[index] as { result: pg.QueryResult }).result.rows as never[]),
      );
      byStatement = new Map(layers.flat().map((statement, index) => [statement, appended[index]!]));
    } catch (error) {
      // Committed, but its rows do not say what was stored: no append may be sent again.
      for (const one of batch) one.reject(error);
      return true;
    }
    for (const one of batch) one.resolve(byStatement.get(one.append.statement)!);
    return true;
  }

  /**
   * The appends in one transaction, sent again without each that fails. Settles every append but
   * those that failed beside others: it returns them, to be sent again alone.
   */
  private async commitTogether(batch: Queued[]): Promise<Queued[]> {
    const failedBesideOthers: Queued[] = [];
    let remaining = batch;
    let deadlocks = 0;
    while (remaining.length > 0) {
      const locking =
        remaining.length > 1 ? [lockStreamsQuery(remaining.map((one) => one.append.statement.stream))] : [];
      const queries = [...locking, ...remaining.flatMap((one) => one.append.queries)];
      let outcomes: Settled[];
      try {
        const settled = await sendInOneTransaction(this.pool, queries);
        const locked = settled[0]!;
        if (locking.length > 0 && !locked.ok) throw locked.error;
        outcomes = settled.slice(locking.length);
      } catch (error) {
        if (isDeadlock(error) && deadlocks++ < maxDeadlockRetries) continue;
        for (const one of remaining) one.reject(error);
        return failedBesideOthers;
      }
      const failed = outcomes.findIndex((outcome) => !outcome.ok);
      if (failed === -1) {
        let offset = 0;
        for (const one of remaining) {
          const own = outcomes.slice(offset, (offset += one.append.queries.length));
          one.resolve(settlePipelinedAppend(one.append, own));
        }
        return failedBesideOthers;
      }
      const error = (outcomes[failed] as { error: unknown }).error;
      if (isDeadlock(error) && deadlocks++ < maxDeadlockRetries) continue;
      const culprit = this.owner(remaining, failed);
      // Not one append's doing (a lost connection, a deadlock past its retries).
      if (!(error instanceof pg.DatabaseError) || isDeadlock(error) || !culprit) {
        for (const one of remaining) one.reject(error);
        return failedBesideOthers;
      }
      if (remaining.length === 1) {
        try {
          culprit.queued.resolve(settlePipelinedAppend(culprit.queued.append, outcomes));
        } catch (refusal) {
          culprit.queued.reject(refusal);
        }
        return failedBesideOthers;
      }
      failedBesideOthers.push(culprit.queued);
      remaining = remaining.filter((one) => one !== culprit.queued);
    }
    return failedBesideOthers;
  }

  /** The append whose query is at `index` of the batch's outcomes (after the lock statement). */
  private owner(batch: readonly Queued[], index: number): { queued: Queued; offset: number } | undefined {
    let offset = 0;
    for (const queued of batch) {
      const end = offset + queued.append.queries.length;
      if (index < end) return { queued, offset };
      offset = end;
    }
    return undefined;
  }
}
