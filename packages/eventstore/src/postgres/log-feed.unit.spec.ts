import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Position, RecordedEvent, Subscription } from '../port.ts';
import { LogFeed, type LogFeedRuntime } from './log-feed.ts';
import type { Batch } from './read.ts';

const position = (at: number): Position => ({ commit: String(at), prepare: String(at) });

/**
 * A log in memory behind the feed's runtime. It polls once a minute, so a delivery within the
 * waits below comes from a read the feed or a subscriber started on its own. `holdNextRead()`
 * holds the next read in flight until its `release()`.
 */
function memoryLog() {
  const events: RecordedEvent[] = [];
  const wakes = new Set<() => void>();
  let held: { arrived: () => void; release: Promise<void> } | undefined;
  const reads: (readonly string[] | undefined)[] = [];
  const runtime: LogFeedRuntime = {
    pollIntervalMs: 60_000,
    fenceRetryMaxDelayMs: 60_000,
    async read(after, limit, streamPrefixes): Promise<Batch> {
      reads.push(streamPrefixes);
      const snapshot = [...events];
      if (held) {
        const { arrived, release } = held;
        held = undefined;
        arrived();
        await release;
      }
      const matching = snapshot
        .filter((event) => Number(event.position.commit) > Number(after.commit))
        .filter(
          (event) => !streamPrefixes || streamPrefixes.some((prefix) => event.stream.startsWith(prefix)),
        )
        .slice(0, limit);
      const full = matching.length === limit;
      const head = snapshot.at(-1)?.position ?? after;
      return { events: matching, heldBack: false, seenThrough: full ? matching.at(-1)!.position : head };
    },
    listen(wake) {
      wakes.add(wake);
      return () => wakes.delete(wake);
    },
    reportBackgroundError(error) {
      throw error;
    },
  };
  return {
    feed: new LogFeed(runtime),
    reads,
    /** Appends without waking anyone (another process's append whose NOTIFY is still on its way). */
    appendQuietly(stream: string): Position {
      const at = position(events.length + 1);
      events.push({
        event_id: `e${events.length + 1}`,
        type: 'Appended',
        data: {},
        metadata: { tenant_id: 't' },
        stream,
        revision: 0,
        position: at,
        created_at: new Date(0),
      });
      return at;
    },
    wakeAll: () => wakes.forEach((wake) => wake()),
    /** The next read waits for the returned `release()`; `arrival` resolves once it waits. */
    holdNextRead() {
      let release!: () => void;
      let arrived!: () => void;
      const arrival = new Promise<void>((resolve) => (arrived = resolve));
      held = { arrived, release: new Promise<void>((resolve) => (release = resolve)) };
      return { arrival, release };
    },
  };
}

describe('the shared read of the log', () => {
  const subscriptions: Subscription[] = [];
  afterEach(async () => {
    await Promise.all(subscriptions.splice(0).map((subscription) => subscription.stop()));
  });
  const subscribe = (log: ReturnType<typeof memoryLog>, streamPrefixes: string[], after?: Position) => {
    const streams: string[] = [];
    const subscription = log.feed.subscribe(
      {
        streamPrefixes,
        ...(after ? { after } : {}),
        onEvents: async (batch) => {
          streams.push(...batch.map((event) => event.stream));
        },
      },
      10,
    );
    subscriptions.push(subscription);
    return streams;
  };

  it('hands a subscriber that joins an idle feed the events after its checkpoint, without waiting for an append or the poll', async () => {
    // Given a feed caught up for one subscriber and waiting for the next append
    const log = memoryLog();
    log.appendQuietly('a-1');
    const first = subscribe(log, ['a-']);
    await vi.waitFor(() => expect(first).toEqual(['a-1']));
    const checkpoint = log.appendQuietly('b-1');
    log.appendQuietly('b-2');

    // When a subscriber of other streams starts from its checkpoint
    const second = subscribe(log, ['b-'], checkpoint);

    // Then it gets what came after its checkpoint
    await vi.waitFor(() => expect(second).toEqual(['b-2']), { timeout: 3_000 });
  });

  it('misses nothing when it joins while the feed reads other streams, past its events', async () => {
    // Given a feed reading for one subscriber, and a read of its streams in flight
    const log = memoryLog();
    const first = subscribe(log, ['a-']);
    await vi.waitFor(() => expect(log.reads).toHaveLength(1));
    const checkpoint = log.appendQuietly('a-1');
    log.appendQuietly('b-1');
    log.appendQuietly('a-2');
    const read = log.holdNextRead();
    log.wakeAll();
    await read.arrival;

    // When a subscriber of other streams starts from a checkpoint the feed has not read past yet
    const second = subscribe(log, ['b-'], checkpoint);
    read.release();

    // Then it gets its event that the read in flight leaves out, and the first one gets its own
    await vi.waitFor(() => expect(second).toEqual(['b-1']), { timeout: 3_000 });
    await vi.waitFor(() => expect(first).toEqual(['a-1', 'a-2']));
  });
});
