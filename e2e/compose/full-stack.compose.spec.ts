import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { TokenvaultClient } from '@tokenvault/sdk';
import { bootstrapTenant, startComposeStack, waitFor, type ComposeStack } from './stack.ts';

// The full stack of docker-compose.yml (with infra/compose/local.yml's images) in containers:
// HAProxy over two gateways, two projectors, two workers, the relay, Kafka, PostgreSQL, Redis and
// the Mailpit stand-in. Everything is reached through loopback ports only.

interface MailSummary {
  ID: string;
  To: { Address: string }[];
}
interface Created {
  id: string;
}

let stack: ComposeStack;
let client: TokenvaultClient;
let apiKey: string;
const viaGateway = (name: 'api-gateway-1' | 'api-gateway-2') =>
  new TokenvaultClient(stack.gatewayUrls[name], apiKey);

/** Every message in the sink (Mailpit's API, newest first, paged). */
async function mails(): Promise<MailSummary[]> {
  const all: MailSummary[] = [];
  for (let start = 0; ; start += 500) {
    const page = (await (
      await fetch(`${stack.mailpitUrl}/api/v1/messages?start=${start}&limit=500`)
    ).json()) as {
      messages: MailSummary[];
      total: number;
    };
    all.push(...page.messages);
    if (page.messages.length === 0 || all.length >= page.total) return all;
  }
}
const mailsTo = async (address: string) =>
  (await mails()).filter((mail) => mail.To.some((to) => to.Address === address));

/** One gateway's line in HAProxy's statistics: its status (UP, DOWN …) and redispatched requests. */
async function gatewayState(server: string): Promise<{ status: string; redispatched: number }> {
  const [header = '', ...lines] = (await (await fetch(`${stack.statsUrl};csv`)).text()).split('\n');
  const columns = header.replace(/^# /, '').split(',');
  const line = lines
    .map((text) => text.split(','))
    .find((fields) => fields[0] === 'gateways' && fields[1] === server);
  if (!line) throw new Error(`no ${server} in HAProxy's statistics`);
  return {
    status: line[columns.indexOf('status')] ?? '',
    redispatched: Number(line[columns.indexOf('wredis')] ?? 0),
  };
}

const invite = (email: string, through = client) =>
  through.request<Created>('POST', '/tenants/self/invitations', { body: { email } });

async function createEchoReactor(): Promise<string> {
  const formula = await client.request<Created>('POST', '/reactor-formulas', {
    body: {
      name: 'echo',
      type: 'private',
      code: 'module.exports = async function (req) { return { raw: req.args }; };',
      configuration: [],
      request_parameters: [{ name: 'value', type: 'string' }],
    },
  });
  expect(formula.status, JSON.stringify(formula.body)).toBe(201);
  const reactor = await client.request<Created>('POST', '/reactors', {
    body: { name: 'echo', configuration: {}, formula: { id: formula.body.id } },
  });
  expect(reactor.status, JSON.stringify(reactor.body)).toBe(201);
  return reactor.body.id;
}

beforeAll(async () => {
  const started = Date.now();
  stack = await startComposeStack();
  apiKey = bootstrapTenant(stack, 'Compose Tenant', 'owner@example.com').api_key;
  client = new TokenvaultClient(stack.url, apiKey);
  console.log(
    `compose tier: images ready in ${stack.buildSeconds} s, stack up and bootstrapped in ${Math.round((Date.now() - started) / 1000)} s`,
  );
});

afterAll(() => {
  stack?.down();
});

describe('the docker-compose stack', () => {
  it('creates tokens through each gateway and reads each back at once through the other one', async () => {
    const pairs = [
      [viaGateway('api-gateway-1'), viaGateway('api-gateway-2')],
      [viaGateway('api-gateway-2'), viaGateway('api-gateway-1')],
      [client, client],
    ] as const;
    for (const [writer, reader] of pairs) {
      for (let i = 0; i < 5; i++) {
        const data = `value ${randomBytes(4).toString('hex')}`;
        const created = await writer.request<Created>('POST', '/tokens', { body: { data } });
        expect(created.status, JSON.stringify(created.body)).toBe(201);
        const read = await reader.request<{ data: unknown }>('GET', `/tokens/${created.body.id}`);
        expect(read.status, JSON.stringify(read.body)).toBe(200);
        expect(read.body.data).toBe(data);
      }
    }
  });

  it('replays an Idempotency-Key and holds an application to its rate limit across the two gateways', async () => {
    const key = randomBytes(8).toString('hex');
    const first = await viaGateway('api-gateway-1').request<Created>('POST', '/tokens', {
      body: { data: 'once' },
      headers: { 'idempotency-key': key },
    });
    const again = await viaGateway('api-gateway-2').request<Created>('POST', '/tokens', {
      body: { data: 'once' },
      headers: { 'idempotency-key': key },
    });
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotency-replayed')).toBeNull();
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotency-replayed')).not.toBeNull();
    expect(again.body.id).toBe(first.body.id);

    const throttled = await client.request<{ key: string }>('POST', '/applications', {
      body: {
        name: 'Throttled',
        type: 'private',
        permissions: ['token:create'],
        rate_limit: { requests_per_minute: 3 },
      },
    });
    expect(throttled.status, JSON.stringify(throttled.body)).toBe(201);
    const gateways = [stack.gatewayUrls['api-gateway-1'], stack.gatewayUrls['api-gateway-2']];
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const through = new TokenvaultClient(gateways[i % 2] ?? stack.url, throttled.body.key);
      statuses.push((await through.request('POST', '/tokens', { body: { data: i } })).status);
    }
    expect(statuses).toEqual([201, 201, 201, 429]);
  });

  it('sends an invitation e-mail once, to the SMTP sink, readable through its Mailpit API', async () => {
    const address = `invitee-${randomBytes(4).toString('hex')}@example.com`;
    const created = await invite(address);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    await waitFor(`the e-mail to ${address}`, async () => (await mailsTo(address)).length > 0);
    // Two workers and two enqueuers run: a second copy would come within the next seconds.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const received = await mailsTo(address);
    expect(received).toHaveLength(1);
    const message = (await (await fetch(`${stack.mailpitUrl}/api/v1/message/${received[0]?.ID}`)).json()) as {
      Subject: string;
      Text: string;
    };
    expect(message.Subject).toContain('Compose Tenant');
    expect(message.Text).toMatch(/invitations\/accept#token=/);
  });

  it('publishes an event that a Kafka consumer on the compose network receives', async () => {
    const created = await client.request<Created>('POST', '/tokens', { body: { data: 'to kafka' } });
    expect(created.status).toBe(201);
    // A consumer in the relay's container (its image has kafkajs): every topic from the start,
    // until a message names the token.
    const consumer = `
      const { createRequire } = require('node:module');
      const { Kafka, logLevel } = createRequire('/app/packages/relay/package.json')('kafkajs');
      const kafka = new Kafka({ brokers: ['kafka:9092'], logLevel: logLevel.NOTHING });
      (async () => {
        const admin = kafka.admin(); await admin.connect();
        const topics = (await admin.listTopics()).filter((t) => !t.startsWith('__')); await admin.disconnect();
        const consumer = kafka.consumer({ groupId: 'compose-tier-' + Date.now() });
        await consumer.connect();
        await consumer.subscribe({ topics, fromBeginning: true });
        setTimeout(() => { console.log('timeout'); process.exit(1); }, 60000);
        await consumer.run({ eachMessage: async ({ topic, message }) => {
          if (String(message.value).includes(process.argv[1])) { console.log('received on ' + topic); process.exit(0); }
        } });
      })().catch((e) => { console.error(e); process.exit(1); });`;
    const result = stack.compose(['exec', '-T', 'relay', 'node', '-e', consumer, created.body.id]);
    expect(result.stdout).toMatch(/^received on \S+/m);
  });

  it('loses nothing when a projector, a gateway and a worker are killed under load', async () => {
    const reactor = await createEchoReactor();
    const acknowledged: string[] = [];
    const invited: string[] = [];
    const runs: { requestId: string; tokenId: string }[] = [];
    const failures: { at: number; what: string }[] = [];
    // The load runs until a few seconds after the last kill.
    const afterLastKillMs = 5_000;
    const containerOf = Object.fromEntries(
      ['projector-1', 'api-gateway-1', 'worker-1'].map((service) => [
        service,
        stack.compose(['ps', '-q', service]).stdout.trim(),
      ]),
    );
    const started = Date.now();
    const kills: { service: string; at: number }[] = [];
    let gatewayOutAfterMs = Number.NaN;
    let stop = false;

    const writer = async () => {
      while (!stop) {
        try {
          const created = await client.request<Created>('POST', '/tokens', {
            body: { data: `load ${acknowledged.length}` },
          });
          if (created.status === 201) acknowledged.push(created.body.id);
          else failures.push({ at: Date.now() - started, what: `POST /tokens ${created.status}` });
        } catch (error) {
          failures.push({ at: Date.now() - started, what: `POST /tokens ${String(error)}` });
        }
      }
    };
    const sideWork = async () => {
      for (let i = 0; !stop; i++) {
        try {
          const address = `load-${i}-${randomBytes(3).toString('hex')}@example.com`;
          const invitation = await invite(address);
          if (invitation.status === 201) invited.push(address);
          const token = await client.request<Created>('POST', '/tokens', { body: { data: `reactor ${i}` } });
          if (token.status === 201) {
            const run = await client.request<{ async_reactor_request_id: string }>(
              'POST',
              `/reactors/${reactor}/react-async`,
              {
                body: { args: { value: `{{${token.body.id}}}` } },
              },
            );
            if (run.status === 202)
              runs.push({ requestId: run.body.async_reactor_request_id, tokenId: token.body.id });
          }
        } catch (error) {
          failures.push({ at: Date.now() - started, what: `side work ${String(error)}` });
        }
        await new Promise((resolve) => setTimeout(resolve, 300));
      }
    };
    const killer = async () => {
      for (const [service, atMs] of [
        ['projector-1', 4_000],
        ['api-gateway-1', 9_000],
        ['worker-1', 14_000],
      ] as const) {
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, started + atMs - Date.now())));
        // docker itself: docker-compose (Python) takes seconds to start on a busy machine.
        execFileSync('docker', ['kill', '--signal', 'SIGKILL', containerOf[service] ?? service], {
          stdio: 'ignore',
        });
        kills.push({ service, at: Date.now() - started });
        if (service === 'api-gateway-1') {
          const killedAt = Date.now();
          await waitFor(
            'HAProxy to take the dead gateway out',
            async () => /^(DOWN|MAINT)/.test((await gatewayState(service)).status),
            30_000,
          );
          gatewayOutAfterMs = Date.now() - killedAt;
        }
      }
    };
    const load = Promise.all([writer(), writer(), writer(), sideWork()]);
    await killer();
    await new Promise((resolve) => setTimeout(resolve, afterLastKillMs));
    stop = true;
    await load;

    const gatewayKilledAt = kills.find((kill) => kill.service === 'api-gateway-1')?.at ?? 0;
    const failuresAfterGatewayLoss = failures.filter((failure) => failure.at > gatewayKilledAt + 5_000);
    console.log(
      `compose load: ${acknowledged.length} tokens, ${invited.length} invitations, ${runs.length} async runs acknowledged; ` +
        `kills at ${kills.map((kill) => `${kill.service} ${kill.at} ms`).join(', ')}; ` +
        `${failures.length} failed requests (${failures
          .map((f) => `${f.at} ms ${f.what}`)
          .slice(0, 5)
          .join('; ')})`,
    );
    expect(acknowledged.length).toBeGreaterThan(20);
    // The load balancer stops sending to the dead gateway within seconds (two failed checks a
    // second apart), and requests whose connection failed meanwhile went to the other one.
    const dead = await gatewayState('api-gateway-1');
    console.log(
      `compose load balancer: api-gateway-1 marked ${dead.status} ${gatewayOutAfterMs} ms after the kill (seen from here); ` +
        `${dead.redispatched} requests redispatched to the other gateway`,
    );
    expect(gatewayOutAfterMs).toBeLessThan(15_000);
    expect(failuresAfterGatewayLoss).toEqual([]);

    // Every acknowledged write is there (through the surviving gateway). One read per write can
    // outrun a key's RATE_LIMIT_PER_MINUTE once the load wrote a few thousand: the reads go with a
    // fresh key (the most a key may grant is its own limit), and a 429 waits as it says.
    const verifier = await viaGateway('api-gateway-2').request<{ key: string }>('POST', '/applications', {
      body: { name: 'Read-back', type: 'private', permissions: ['token:read'] },
    });
    expect(verifier.status, JSON.stringify(verifier.body)).toBe(201);
    const readBack = new TokenvaultClient(stack.gatewayUrls['api-gateway-2'], verifier.body.key);
    for (const id of acknowledged) {
      let read = await readBack.request('GET', `/tokens/${id}`);
      while (read.status === 429) {
        const waitMs = 1_000 * Number(read.headers.get('retry-after') ?? 1);
        await new Promise((resolve) => setTimeout(resolve, waitMs));
        read = await readBack.request('GET', `/tokens/${id}`);
      }
      expect(read.status, id).toBe(200);
    }
    // The audit log (the projectors' read model) catches up with exactly one row per token event.
    await waitFor(
      'the audit log to catch up',
      async () =>
        stack.sql(
          `SELECT count(*) FROM es_events e WHERE e.event_type = 'TokenCreated'
             AND (SELECT count(*) FROM audit_logs a WHERE a.event_id = e.event_id) <> 1`,
        )[0] === '0',
      60_000,
    );
    // Every e-mail arrives; a second copy only for a worker killed between the SMTP server's
    // acceptance and the job's completion.
    await waitFor(
      'every invitation e-mail',
      async () => {
        const received = new Set((await mails()).flatMap((mail) => mail.To.map((to) => to.Address)));
        return invited.every((address) => received.has(address));
      },
      90_000,
    );
    const all = await mails();
    const copies = invited.map(
      (address) => all.filter((mail) => mail.To.some((to) => to.Address === address)).length,
    );
    const duplicated = copies.filter((count) => count > 1).length;
    // Every async reactor run ends once: completed, or failed if it was running on the killed
    // worker (a run whose worker died is failed, never run again: docs/decisions.md, reactor code
    // may not be idempotent; BullMQ notices the stalled job within a minute or so).
    const statuses = new Map<string, string>();
    await waitFor(
      'every async reactor run to end',
      async () => {
        for (const run of runs) {
          if (statuses.get(run.requestId) === 'completed' || statuses.get(run.requestId) === 'failed')
            continue;
          const polled = await client.request<{ status: string }>(
            'GET',
            `/reactors/${reactor}/results/${run.requestId}`,
          );
          statuses.set(run.requestId, polled.body.status);
        }
        return [...statuses.values()].every((status) => status === 'completed' || status === 'failed');
      },
      180_000,
    );
    // A run's code detokenizes its own token: each read is recorded once per execution.
    const reads = runs.map((run) =>
      Number(
        stack.sql(
          `SELECT count(*) FROM es_events, jsonb_array_elements(data->'reads') AS read
            WHERE event_type = 'TokensReadBatch' AND read::text LIKE '%${run.tokenId}%'`,
        )[0],
      ),
    );
    const failedRuns = runs.filter((run) => statuses.get(run.requestId) === 'failed').length;
    console.log(
      `compose failover: ${invited.length} e-mails all received (${duplicated} sent twice); ` +
        `${runs.length} async runs ended: ${runs.length - failedRuns} completed, ${failedRuns} failed with their worker; ` +
        `most reads of a run's token: ${Math.max(0, ...reads)}`,
    );
    // Completed runs ran (their token was read); no run ran twice.
    runs.forEach((run, index) => {
      if (statuses.get(run.requestId) === 'completed') expect(reads[index], run.requestId).toBe(1);
      else expect(reads[index], run.requestId).toBeLessThanOrEqual(1);
    });
    // Only the killed worker's jobs in flight may fail (REACTOR_CONCURRENCY, 4 by default) or, for
    // e-mails, be sent twice: a handful at most.
    expect(failedRuns).toBeLessThanOrEqual(4);
    expect(duplicated).toBeLessThanOrEqual(4);
  });
});
