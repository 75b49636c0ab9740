import type { NotificationHub } from '@tokenvault/platform';
import { invalidationChannel } from './projector.ts';

/** A cache key that a projection declared stale, or null: anything may be stale. */
export type InvalidationListener = (key: string | null) => void;

/**
 * The process's caches learn here which of their keys went stale: the keys the projections
 * declare in their transactions arrive by NOTIFY (`notifyInvalidation`), this process's own
 * writes are told at once (`invalidate`). Notifications sent while the LISTEN connection was down
 * are lost, so a reconnection declares everything stale.
 */
export class CacheInvalidations {
  private readonly listeners = new Set<InvalidationListener>();
  private readonly unlisten: (() => void)[] = [];
  private readonly notifications: NotificationHub;

  /** `notifications`: the process's LISTEN connection. */
  constructor(notifications: NotificationHub) {
    this.notifications = notifications;
  }

  /** Listens before its first await: a caller starting several listeners has them on one LISTEN. */
  async start(): Promise<void> {
    this.unlisten.push(
      this.notifications.listen(invalidationChannel, (payload) => this.invalidate(payload || null)),
      this.notifications.onConnected(() => this.invalidate(null)),
    );
    await this.notifications.connected();
  }

  close(): void {
    for (const unlisten of this.unlisten) unlisten();
  }

  onInvalidation(listener: InvalidationListener): void {
    this.listeners.add(listener);
  }

  /** Tells this process's caches at once (the same keys reach other processes by NOTIFY). */
  invalidate(key: string | null): void {
    for (const listener of this.listeners) listener(key);
  }
}
