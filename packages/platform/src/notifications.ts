import pg from 'pg';

export type NotificationHandler = (payload: string) => void;

export interface NotificationHubOptions {
  /** A new, unconnected client for the LISTEN connection (one at a time). */
  createClient: () => pg.Client;
  /** The connection failed or dropped (it reconnects on its own). */
  onError?: (error: unknown) => void;
}

const maxReconnectDelayMs = 5_000;

/**
 * One LISTEN connection per process and database, shared by everything that waits on
 * PostgreSQL notifications (event-store subscriptions, read-your-writes, cache invalidation).
 * It reconnects with backoff when the connection drops; notifications sent meanwhile are lost,
 * so after every (re)connection it calls the `onConnected` handlers, which must look again at
 * whatever they follow.
 */
export class NotificationHub {
  private client: pg.Client | undefined;
  private connecting: Promise<void> | undefined;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private failedAttempts = 0;
  private closed = false;
  private readonly channels = new Map<string, Set<NotificationHandler>>();
  private readonly connectedHandlers = new Set<() => void>();
  private readonly waitingForConnection = new Set<() => void>();

  private readonly options: NotificationHubOptions;
  constructor(options: NotificationHubOptions) {
    this.options = options;
  }

  /** Calls `handler` with the payload of every notification on `channel`; returns the unsubscribe. */
  listen(channel: string, handler: NotificationHandler): () => void {
    let handlers = this.channels.get(channel);
    if (!handlers) {
      handlers = new Set();
      this.channels.set(channel, handlers);
      // A channel added to a live connection is listened to at once; otherwise at connection.
      this.client?.query(`LISTEN ${pg.escapeIdentifier(channel)}`).catch((error: unknown) => {
        this.reportError(error);
      });
    }
    handlers.add(handler);
    this.ensureConnected();
    return () => {
      handlers.delete(handler);
    };
  }

  /** Called after every (re)connection, once all channels are listened to. */
  onConnected(handler: () => void): () => void {
    this.connectedHandlers.add(handler);
    this.ensureConnected();
    return () => this.connectedHandlers.delete(handler);
  }

  /** Resolves once a connection listens to every channel (at once when one does). */
  connected(): Promise<void> {
    if (this.client) return Promise.resolve();
    this.ensureConnected();
    return new Promise((resolve) => this.waitingForConnection.add(resolve));
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.reconnectTimer);
    await this.connecting;
    const client = this.client;
    this.client = undefined;
    for (const resolve of this.waitingForConnection) resolve();
    this.waitingForConnection.clear();
    await client?.end().catch(() => {});
  }

  private ensureConnected(): void {
    if (this.closed || this.client || this.connecting || this.reconnectTimer) return;
    this.connecting = this.connect().finally(() => (this.connecting = undefined));
  }

  private async connect(): Promise<void> {
    const client = this.options.createClient();
    let dropped = false;
    const drop = (error?: unknown) => {
      if (dropped) return;
      dropped = true;
      if (error !== undefined && !this.closed) this.reportError(error);
      if (this.client === client) this.client = undefined;
      void client.end().catch(() => {});
      this.scheduleReconnect();
    };
    client.on('notification', (message) => {
      for (const handler of this.channels.get(message.channel) ?? []) handler(message.payload ?? '');
    });
    client.on('error', drop);
    client.on('end', () => drop());
    try {
      await client.connect();
      // Until this.client is set, listen() leaves new channels to this loop: it runs until none
      // is left, and nothing awaits between its last check and the assignment below.
      const listened = new Set<string>();
      for (;;) {
        const fresh = [...this.channels.keys()].filter((channel) => !listened.has(channel));
        if (fresh.length === 0) break;
        await client.query(fresh.map((channel) => `LISTEN ${pg.escapeIdentifier(channel)};`).join(' '));
        for (const channel of fresh) listened.add(channel);
      }
    } catch (error) {
      drop(error);
      return;
    }
    if (this.closed || dropped) {
      await client.end().catch(() => {});
      return;
    }
    this.client = client;
    this.failedAttempts = 0;
    for (const resolve of this.waitingForConnection) resolve();
    this.waitingForConnection.clear();
    for (const handler of this.connectedHandlers) handler();
  }

  private scheduleReconnect(): void {
    if (this.closed || this.reconnectTimer) return;
    const delay = Math.min(100 * 2 ** this.failedAttempts, maxReconnectDelayMs);
    this.failedAttempts++;
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      this.ensureConnected();
    }, delay);
    this.reconnectTimer.unref();
  }

  private reportError(error: unknown): void {
    try {
      this.options.onError?.(error);
    } catch {
      // A failing reporter must not break the hub.
    }
  }
}

/** A hub on its own connection to `connectionString` (the pool's settings, without its role). */
export function createNotificationHub(
  connectionString: string,
  onError?: (error: unknown) => void,
): NotificationHub {
  return new NotificationHub({
    createClient: () => new pg.Client({ connectionString }),
    ...(onError ? { onError } : {}),
  });
}
