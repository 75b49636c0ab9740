import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TokenvaultClient } from '@tokenvault/sdk';
import { bootstrapTenant, startComposeStack, waitFor, type ComposeStack } from './stack.ts';

// Two projector replicas (docker-compose.yml's projector-1 and projector-2): one holds the
// read-models processor's lease and works, the other stands by; killed, the active one is taken
// over within PROCESSOR_LEASE_MS (10 s by default), from the checkpoint, with nothing lost or doubled.

type Projector = 'projector-1' | 'projector-2';
const projectors: Projector[] = ['projector-1', 'projector-2'];
const processor = 'read-models';

let stack: ComposeStack;
let client: TokenvaultClient;

/** The container whose hostname (its short id) heads the lease's holder, or undefined. */
function leaseHolder(): Projector | undefined {
  const [holder = ''] = stack.sql(
    `SELECT holder FROM processor_leases WHERE name = '${processor}' AND expires_at > now()`,
  );
  return projectors.find((service) => {
    const id = stack.compose(['ps', '-q', service]).stdout.trim();
    return id !== '' && holder.startsWith(`${id.slice(0, 12)}/`);
  });
}

/** What a projector logged of the read-models processor's lease, in order. */
function leaseLog(service: Projector): string[] {
  return stack
    .compose(['logs', '--no-color', '--no-log-prefix', service])
    .stdout.split('\n')
    .flatMap((line) => {
      try {
        const entry = JSON.parse(line.slice(line.indexOf('{'))) as { msg?: string; processor?: string };
        return entry.processor === processor && entry.msg?.includes('lease') ? [entry.msg] : [];
      } catch {
        return [];
      }
    });
}

/** TokenCreated events without exactly one audit row (the projector's read model): none once caught up. */
const unaudited = () =>
  stack.sql(
    `SELECT count(*) FROM es_events e WHERE e.event_type = 'TokenCreated'
       AND (SELECT count(*) FROM audit_logs a WHERE a.event_id = e.event_id) <> 1`,
  )[0];

const createTokens = async (count: number): Promise<string[]> => {
  const ids: string[] = [];
  for (let index = 0; index < count; index++) {
    const created = await client.request<{ id: string }>('POST', '/tokens', {
      body: { data: `value ${index}` },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    ids.push(created.body.id);
  }
  return ids;
};

beforeAll(async () => {
  // Info: the processors' lease lines (taken, standing by) are what this spec reads.
  stack = await startComposeStack({ logLevel: 'info' });
  client = new TokenvaultClient(
    stack.url,
    bootstrapTenant(stack, 'Takeover Tenant', 'owner@example.com').api_key,
  );
});

afterAll(() => {
  stack?.down();
});

describe('processor replicas', () => {
  it('a killed active projector is taken over by the standby, nothing lost or doubled', async () => {
    let active: Projector | undefined;
    await waitFor(
      'a projector to hold the read-models lease',
      async () => (active = leaseHolder()) !== undefined,
    );
    const standby = projectors.find((service) => service !== active)!;
    const before = await createTokens(10);
    await waitFor('the audit log of the first tokens', async () => unaudited() === '0');
    // While both ran, the standby only stood by: it never took the lease, so it handled no batch.
    expect(leaseLog(standby)).toEqual(['event processor standing by: another instance holds its lease']);
    expect(leaseLog(active!)).toEqual(['event processor lease taken; running']);

    stack.compose(['kill', '-s', 'SIGKILL', active!]);
    const killed = Date.now();
    const after = await createTokens(10);
    await waitFor('the standby to take the lease', async () => leaseHolder() === standby, 60_000);
    const tookOverMs = Date.now() - killed;
    console.log(
      `compose processor takeover: ${standby} holds the read-models lease ${tookOverMs} ms after the kill`,
    );
    expect(leaseLog(standby)).toEqual([
      'event processor standing by: another instance holds its lease',
      'event processor lease taken; running',
    ]);

    // Every token, before and after the kill (this stack holds no others): one read-model row
    // each, and one audit row per TokenCreated event, written by one projector or the other.
    const ids = [...before, ...after];
    await waitFor('the audit log of every token', async () => unaudited() === '0', 60_000);
    expect(stack.sql(`SELECT count(*) FROM es_events WHERE event_type = 'TokenCreated'`)).toEqual([
      String(ids.length),
    ]);
    expect(stack.sql('SELECT count(*), count(DISTINCT id) FROM tokens')).toEqual([
      `${ids.length}|${ids.length}`,
    ]);
    expect(
      stack.sql(
        'SELECT count(*), count(DISTINCT event_id) FROM audit_logs a JOIN es_events e USING (event_id) ' +
          "WHERE e.event_type = 'TokenCreated'",
      ),
    ).toEqual([`${ids.length}|${ids.length}`]);
  });
});
