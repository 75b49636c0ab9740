import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { Destination } from './resolve.ts';

export interface DestinationConnectionLimits {
  /**
   * Pools kept at once (one per tenant and destination). Past it the least recently used closes
   * its idle connections at once, and its busy ones when their request is done.
   */
  maxPools: number;
  /** Idle connections one pool keeps open. */
  maxIdleSocketsPerPool: number;
  /** How long an idle connection stays open. */
  idleTimeoutMs: number;
}

/**
 * Keep-alive connections to outbound destinations (the proxy's): one pool per tenant and checked destination
 * (protocol, host, port and the address its name resolved to and was checked as). A connection is
 * opened only for a request whose destination was checked, to that request's address, and is
 * reused only by requests of the same tenant to the same address: never across tenants, and
 * never towards an address another answer of the name gave. TLS options (certificate
 * authorities, server name) are part of each connection's key within its pool.
 */
export class DestinationConnections {
  /** In least recently used order (a Map keeps insertion order; a use moves its key to the end). */
  private readonly pools = new Map<string, HttpAgent>();
  private readonly limits: DestinationConnectionLimits;

  constructor(limits: DestinationConnectionLimits) {
    this.limits = limits;
  }

  /** The pool for requests of `tenantId` to `destination`. */
  poolFor(tenantId: string, destination: Destination): HttpAgent {
    const { url, address } = destination;
    const key = JSON.stringify([tenantId, url.protocol, url.host, address]);
    const known = this.pools.get(key);
    if (known) {
      this.pools.delete(key);
      this.pools.set(key, known);
      return known;
    }
    const options = {
      keepAlive: true,
      maxFreeSockets: this.limits.maxIdleSocketsPerPool,
      timeout: this.limits.idleTimeoutMs,
      scheduling: 'lifo' as const,
    };
    const pool = url.protocol === 'https:' ? new HttpsAgent(options) : new HttpAgent(options);
    this.pools.set(key, pool);
    for (const [oldest, oldestPool] of this.pools) {
      if (this.pools.size <= this.limits.maxPools) break;
      this.pools.delete(oldest);
      retire(oldestPool);
    }
    return pool;
  }

  /** Closes every connection (requests in flight fail): the process is stopping. */
  close(): void {
    for (const pool of this.pools.values()) pool.destroy();
    this.pools.clear();
  }
}

/** A pool no longer handed out: its idle connections close now, its busy ones once free. */
function retire(pool: HttpAgent): void {
  pool.maxFreeSockets = 0;
  for (const sockets of Object.values(pool.freeSockets)) for (const socket of sockets ?? []) socket.destroy();
}
