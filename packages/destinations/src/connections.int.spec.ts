import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DestinationConnections } from './connections.ts';
import type { Destination } from './resolve.ts';
import { sendToDestination } from './send.ts';

// Keep-alive pools to destinations, against a real HTTP server on loopback that counts the
// connections it is given.
describe('DestinationConnections', () => {
  let server: Server;
  let port: number;
  const connections: Socket[] = [];
  const limits = { timeoutMs: 5_000, maxResponseBytes: 1_000 };

  beforeAll(async () => {
    server = createServer((req, res) => {
      const query = new URL(req.url!, 'http://x').searchParams;
      const answer = () => res.end('x'.repeat(Number(query.get('size') ?? 2)));
      setTimeout(answer, Number(query.get('delay') ?? 0));
    });
    server.on('connection', (socket: Socket) => connections.push(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const destination = (path = '/', address = '127.0.0.1'): Destination => ({
    url: new URL(`http://127.0.0.1:${port}${path}`),
    address,
    family: 4,
  });
  const send = (pools: DestinationConnections, tenantId: string, target = destination()) =>
    sendToDestination(target, { method: 'GET', headers: {} }, limits, pools.poolFor(tenantId, target));
  /** Runs `work` with pools of its own, closed after it. */
  const withPools = async (maxPools: number, work: (pools: DestinationConnections) => Promise<void>) => {
    const pools = new DestinationConnections({ maxPools, maxIdleSocketsPerPool: 4, idleTimeoutMs: 30_000 });
    try {
      await work(pools);
    } finally {
      pools.close();
    }
  };
  const opened = async (work: () => Promise<unknown>) => {
    const before = connections.length;
    await work();
    return connections.length - before;
  };

  it('reuses one connection for a tenant’s requests to one destination, one after the other', () =>
    withPools(8, async (pools) => {
      expect(
        await opened(async () => {
          for (let request = 0; request < 5; request++) {
            expect((await send(pools, 'tenant-a')).body.toString()).toBe('xx');
          }
        }),
      ).toBe(1);
    }));

  it('never shares a connection between tenants, nor between checked addresses of one name', () =>
    withPools(8, async (pools) => {
      expect(
        await opened(async () => {
          await send(pools, 'tenant-a');
          await send(pools, 'tenant-b');
          await send(pools, 'tenant-a');
          await send(pools, 'tenant-b');
        }),
      ).toBe(2);
      expect(pools.poolFor('tenant-a', destination('/', '127.0.0.1'))).not.toBe(
        pools.poolFor('tenant-a', destination('/', '127.0.0.2')),
      );
      expect(pools.poolFor('tenant-a', destination('/one'))).toBe(
        pools.poolFor('tenant-a', destination('/two')),
      );
    }));

  it('closes the least recently used pool past maxPools, and a connection whose answer was too large', () =>
    withPools(2, async (pools) => {
      await send(pools, 'tenant-a');
      const tenantAConnection = connections.at(-1)!;
      await send(pools, 'tenant-b');
      await send(pools, 'tenant-c');
      await expect
        .poll(() => tenantAConnection.destroyed || tenantAConnection.readableEnded, { timeout: 5_000 })
        .toBe(true);
      expect(await opened(() => send(pools, 'tenant-a'))).toBe(1);

      await expect(send(pools, 'tenant-a', destination('/?size=5000'))).rejects.toMatchObject({
        status: 502,
      });
      expect(await opened(() => send(pools, 'tenant-a'))).toBe(1);
    }));

  it('lets a request in flight on a pool closed past maxPools finish, then closes its connection', () =>
    withPools(1, async (pools) => {
      const slow = send(pools, 'tenant-a', destination('/?delay=300'));
      await expect.poll(() => connections.at(-1)?.bytesRead ?? 0).toBeGreaterThan(0);
      const slowConnection = connections.at(-1)!;
      await send(pools, 'tenant-b');
      expect((await slow).body.toString()).toBe('xx');
      await expect
        .poll(() => slowConnection.destroyed || slowConnection.readableEnded, { timeout: 5_000 })
        .toBe(true);
    }));
});
