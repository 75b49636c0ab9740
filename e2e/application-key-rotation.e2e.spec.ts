// Rotating an application's key without downtime (docs/applications.md, "Rotating a key"): a
// client keeps a steady stream of requests going while its operator creates a new key, the
// client switches to it, and the old key is deleted. Not one request fails but those sent with
// the old key after its deletion, which are 401s.
import { describe, expect, it } from 'vitest';
import { useStack } from './support/stack.ts';

interface Sent {
  key: 'old' | 'new';
  /** Sent after the DELETE of the old key had answered. */
  afterDeletion: boolean;
  status: number;
}

describe('rotating an application key', () => {
  // No request may be refused for its rate: the stream runs as fast as the machine answers.
  const env = useStack({ LOG_LEVEL: 'warn', RATE_LIMIT_PER_MINUTE: '0' });

  it('loses no request: create the new key, switch the stream to it, delete the old one', async () => {
    const management = env.tenant.client;
    const application = await management.request<{ id: string; key: string }>('POST', '/applications', {
      body: { name: 'Checkout back end', type: 'private', permissions: ['token:create', 'token:read'] },
    });
    expect(application.status).toBe(201);
    const keys = { old: application.body.key, new: '' };
    let current: Sent['key'] = 'old';
    let deleted = false;
    let stopped = false;
    const sent: Sent[] = [];
    // Old-key requests still in flight: the switch waits for them before the old key goes.
    let oldInFlight = 0;

    // Four callers, each sending one request after another: a token written, then read back.
    const caller = async (index: number) => {
      for (let round = 0; !stopped; round++) {
        const key = current;
        const afterDeletion = deleted;
        if (key === 'old') oldInFlight++;
        const client = management.withKey(keys[key]);
        const written = await client.request<{ id: string }>('POST', '/tokens', {
          body: { data: { caller: index, round } },
        });
        let answer = written.status;
        if (written.status === 201) {
          answer = (await client.request('GET', `/tokens/${written.body.id}`)).status;
        }
        if (key === 'old') oldInFlight--;
        sent.push({ key, afterDeletion, status: answer });
      }
    };
    const stream = Promise.all([0, 1, 2, 3].map(caller));
    const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    const until = async (condition: () => boolean) => {
      while (!condition()) await pause(10);
    };

    await until(() => sent.length >= 20);
    // 1. The operator creates the new key (the old one keeps working meanwhile).
    const created = await management.request<{ id: string; key: string }>(
      'POST',
      `/applications/${application.body.id}/keys`,
    );
    expect(created.status).toBe(201);
    keys.new = created.body.key;
    await until(() => sent.filter((request) => request.key === 'old').length >= 40);
    // 2. The client switches to it; what it sent with the old key finishes.
    current = 'new';
    await until(() => oldInFlight === 0);
    await until(() => sent.filter((request) => request.key === 'new').length >= 20);
    // 3. The old key is deleted; from the DELETE's answer on, it is refused.
    const removed = await management.request(
      'DELETE',
      `/applications/${application.body.id}/keys/${application.body.id}`,
    );
    expect(removed.status).toBe(204);
    deleted = true;
    await until(() => sent.filter((request) => request.afterDeletion).length >= 20);
    // A straggler still holding the old key (a process that missed the switch).
    current = 'old';
    await until(() => sent.filter((request) => request.key === 'old' && request.afterDeletion).length >= 8);
    stopped = true;
    await stream;

    const served = sent.filter((request) => !(request.key === 'old' && request.afterDeletion));
    const refused = sent.filter((request) => request.key === 'old' && request.afterDeletion);
    expect(served.filter((request) => request.key === 'old').length).toBeGreaterThanOrEqual(40);
    expect(served.filter((request) => request.key === 'new').length).toBeGreaterThanOrEqual(20);
    expect(served.filter((request) => request.status !== 200)).toEqual([]);
    expect(refused.length).toBeGreaterThanOrEqual(8);
    expect(new Set(refused.map((request) => request.status))).toEqual(new Set([401]));
    // The new key is the application's only key now.
    const listed = await management.request<{ id: string }[]>(
      'GET',
      `/applications/${application.body.id}/keys`,
    );
    expect(listed.body.map((key) => key.id)).toEqual([created.body.id]);
  });
});
