import type { Position } from '@tokenvault/eventstore';
import { CacheInvalidations, type InvalidationListener } from './cache-invalidations.ts';
import { ReadYourWrites, type ReadYourWritesOptions } from './read-your-writes.ts';

export type ReadModelConsistencyOptions = ReadYourWritesOptions;

/**
 * What a process's writes and caches need of the read models, on its one LISTEN connection:
 * read-your-writes (ReadYourWrites: waiting for the projector's checkpoint) and the caches'
 * invalidations (CacheInvalidations). A transaction of the projector sends its invalidations
 * before its checkpoint, and the connection delivers them in order: a cache evicts before any
 * waiter of that write wakes. One object, because every role's composition root, route factory
 * and cache takes it as `consistency` (ContextDeps): the two stay behind it as collaborators.
 */
export class ReadModelConsistency {
  private readonly readYourWrites: ReadYourWrites;
  private readonly invalidations: CacheInvalidations;

  constructor(options: ReadModelConsistencyOptions) {
    this.readYourWrites = new ReadYourWrites(options);
    this.invalidations = new CacheInvalidations(options.notifications);
  }

  /** Both listen before either awaits, so one connection (re)listens to both channels at once. */
  async start(): Promise<void> {
    await Promise.all([this.invalidations.start(), this.readYourWrites.start()]);
  }

  async close(): Promise<void> {
    this.readYourWrites.close();
    this.invalidations.close();
  }

  onInvalidation(listener: InvalidationListener): void {
    this.invalidations.onInvalidation(listener);
  }

  /** Tells this process's caches at once (the same keys reach other processes by NOTIFY). */
  invalidate(key: string | null): void {
    this.invalidations.invalidate(key);
  }

  /** Resolves true once the read models include the write, false when the wait timed out. */
  waitFor(target: Position, timeoutMs?: number): Promise<boolean> {
    return this.readYourWrites.waitFor(target, timeoutMs);
  }

  /** Resolves true once the read models writes answer from include this write. */
  writeReadable(position: Position, timeoutMs?: number): Promise<boolean> {
    return this.readYourWrites.writeReadable(position, timeoutMs);
  }

  /** Headers for a write's response: whether the read side is still catching up. */
  afterWrite(position: Position | null): Promise<Record<string, string>> {
    return this.readYourWrites.afterWrite(position);
  }

  /** Headers for an answer that names what another write made (ReadYourWrites.afterLatestWrites). */
  afterLatestWrites(): Promise<Record<string, string>> {
    return this.readYourWrites.afterLatestWrites();
  }

  /** Headers for a read of a read model only the projector writes (ReadYourWrites.beforeTrailingRead). */
  beforeTrailingRead(): Promise<Record<string, string>> {
    return this.readYourWrites.beforeTrailingRead();
  }
}
