import { describe, expect, it } from 'vitest';
import { useStack } from './support/stack.ts';

describe('read-your-writes', () => {
  const env = useStack({ LOG_LEVEL: 'warn' });

  it('500 POST-then-GET pairs, 10 clients at once: every GET sees its write', async () => {
    const pairs = 500;
    const clients = 10;
    let misses = 0;
    let lagging = 0;
    let next = 0;
    await Promise.all(
      Array.from({ length: clients }, async () => {
        while (next < pairs) {
          const index = next++;
          const created = await env.tenant.client.request<{ id: string }>('POST', '/tokens', {
            body: { data: { index } },
          });
          expect(created.status).toBe(201);
          if (created.headers.get('x-read-model-lagging')) lagging++;
          const read = await env.tenant.client.request<{ data: { index: number } }>(
            'GET',
            `/tokens/${created.body.id}`,
          );
          if (read.status !== 200 || read.body.data.index !== index) misses++;
        }
      }),
    );
    expect(lagging).toBe(0);
    expect(misses).toBe(0);
  });
});
