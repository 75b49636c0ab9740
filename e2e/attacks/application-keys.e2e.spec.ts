// Application keys from the attacker's side. An application may have several keys, each acting as
// it: a key minted for an application is that application's grants in the minter's hands, a key
// that should be dead but still resolves somewhere is a leaked credential that outlived its
// revocation, and a key's secret (or its SHA-256, which is what a request is resolved by) seen
// anywhere but in its create response is a key handed out.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TokenvaultClient } from '@tokenvault/sdk';
import {
  collect,
  testBrokers,
  uniquePrefix,
  waitForRelay,
  waitForTopics,
  type Collected,
} from '../kafka/support.ts';
import { startGatewayProcess, type GatewayProcess } from '../support/gateway-process.ts';
import { useStack, type TestTenant } from '../support/stack.ts';

interface Answer {
  id: string;
  key: string;
  errors?: Record<string, string[]>;
}

const digestOf = (key: string) => createHash('sha256').update(key, 'utf8').digest('hex');

describe('attack: application keys', () => {
  const brokers = testBrokers();
  const prefix = uniquePrefix('application-keys');
  // Kafka on, so that what the relay publishes of key events is read back; debug logs, so that
  // everything the service logs is searched.
  const env = useStack({ KAFKA_BROKERS: brokers, KAFKA_TOPIC_PREFIX: prefix, LOG_LEVEL: 'debug' });
  let second: GatewayProcess;
  let kafka: Collected;

  beforeAll(async () => {
    second = await startGatewayProcess(env.stack.config);
    await waitForTopics(brokers, prefix);
    kafka = await collect(brokers, prefix);
  }, 120_000);
  afterAll(async () => {
    await kafka?.consumer.stop();
    await second?.stop();
  });

  const owner = () => env.tenant.client;
  const createApplication = async (
    tenant: TestTenant,
    name: string,
    permissions: string[],
    type = 'private',
  ) => {
    const created = await tenant.client.request<Answer>('POST', '/applications', {
      body: { name, type, permissions },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body;
  };
  const keyIdsOf = async (applicationId: string) =>
    (await owner().request<{ id: string }[]>('GET', `/applications/${applicationId}/keys`)).body.map(
      (key) => key.id,
    );
  /** What a key gets when it reads its own application, from one gateway process. */
  const statusAt = async (url: string, key: string) =>
    (await new TokenvaultClient(url, key).request('GET', '/applications/key')).status;

  it('a low-privilege key mints no key for an application holding more than it does, nor revokes one (403, nothing written)', async () => {
    // The attacker: a key that may update applications and create tokens, nothing else.
    const low = await createApplication(env.tenant, 'Low', [
      'application:update',
      'application:read',
      'token:create',
    ]);
    const lowClient = owner().withKey(low.key);
    const reader = await createApplication(env.tenant, 'Card reader', ['token:read']);
    for (const target of [env.tenant.applicationId, reader.id]) {
      const before = await keyIdsOf(target);
      const minted = await lowClient.request<Answer>('POST', `/applications/${target}/keys`);
      expect(minted.status, target).toBe(403);
      expect(Object.keys(minted.body.errors ?? {})).toEqual(['path.id']);
      expect(minted.body.key).toBeUndefined();
      const revoked = await lowClient.request<Answer>('DELETE', `/applications/${target}/keys/${target}`);
      expect(revoked.status, target).toBe(403);
      expect(await keyIdsOf(target)).toEqual(before);
    }
    // The management key and the reader's key still work.
    expect(await statusAt(env.stack.url, env.tenant.apiKey)).toBe(200);
    expect(await statusAt(env.stack.url, reader.key)).toBe(200);
    // What it holds itself it may mint keys for (its own application, or a lesser one).
    const lesser = await createApplication(env.tenant, 'Lesser', ['token:create']);
    const minted = await lowClient.request<Answer>('POST', `/applications/${lesser.id}/keys`);
    expect(minted.status).toBe(201);
    expect(await statusAt(env.stack.url, minted.body.key)).toBe(200);
  });

  it('another tenant’s application keys are never listed, read, minted or deleted (404), and keep working', async () => {
    const victim = await createApplication(env.tenant, 'Victim', ['token:read']);
    const attacker = await env.stack.createTenant('Attacker');
    const paths = [`/applications/${victim.id}/keys`, `/applications/${victim.id}/keys/${victim.id}`];
    for (const [method, path] of [
      ['GET', paths[0]!],
      ['POST', paths[0]!],
      ['GET', paths[1]!],
      ['DELETE', paths[1]!],
    ] as const) {
      const answer = await attacker.client.request<Record<string, unknown>>(method, path);
      expect(answer.status, `${method} ${path}`).toBe(404);
      expect(JSON.stringify(answer.body)).not.toContain(victim.id);
    }
    // Its own application's path with the victim's key id: nothing either.
    const own = attacker.applicationId;
    expect((await attacker.client.request('GET', `/applications/${own}/keys/${victim.id}`)).status).toBe(404);
    expect(await keyIdsOf(victim.id)).toEqual([victim.id]);
    expect(await statusAt(env.stack.url, victim.key)).toBe(200);
  });

  it('a deleted key works nowhere: neither in the gateway that deleted it nor in another process, though both had it cached', async () => {
    const application = await createApplication(env.tenant, 'Rotated', ['token:create']);
    const replacement = await owner().request<Answer>('POST', `/applications/${application.id}/keys`);
    const gateways = [env.stack.url, second.url];
    // Both processes resolve (and cache) the old key first.
    for (const url of gateways) expect(await statusAt(url, application.key), url).toBe(200);
    const deleted = await owner().request('DELETE', `/applications/${application.id}/keys/${application.id}`);
    expect(deleted.status).toBe(204);
    for (const url of gateways) {
      expect(await statusAt(url, application.key), url).toBe(401);
      expect(await statusAt(url, replacement.body.key), url).toBe(200);
    }
    // Deleted through the other process, refused here at once too.
    for (const url of gateways) expect(await statusAt(url, replacement.body.key), url).toBe(200);
    const viaSecond = await new TokenvaultClient(second.url, env.tenant.apiKey).request(
      'DELETE',
      `/applications/${application.id}/keys/${replacement.body.id}`,
    );
    expect(viaSecond.status).toBe(204);
    for (const url of [second.url, env.stack.url]) {
      expect(await statusAt(url, replacement.body.key), url).toBe(401);
    }
  });

  it('an expired key is a 401 in every process from its expires_at on, though both had it cached', async () => {
    const application = await createApplication(env.tenant, 'Expiring', ['token:create']);
    const expiresAt = new Date(Date.now() + 3_000);
    const expiring = await owner().request<Answer>('POST', `/applications/${application.id}/keys`, {
      body: { expires_at: expiresAt.toISOString() },
    });
    expect(expiring.status).toBe(201);
    const gateways = [env.stack.url, second.url];
    for (const url of gateways) expect(await statusAt(url, expiring.body.key), url).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, expiresAt.getTime() - Date.now()) + 50));
    for (const url of gateways) expect(await statusAt(url, expiring.body.key), url).toBe(401);
    // The application's other key is not touched.
    for (const url of gateways) expect(await statusAt(url, application.key), url).toBe(200);
  });

  it('a key’s secret and its digest appear nowhere but in its create response: not in GET answers, logs, audit rows or Kafka', async () => {
    const application = await createApplication(env.tenant, 'Secretive', [
      'token:create',
      'application:read',
    ]);
    const created = await owner().request<Answer>('POST', `/applications/${application.id}/keys`);
    expect(created.status).toBe(201);
    const secrets = [
      created.body.key,
      digestOf(created.body.key),
      application.key,
      digestOf(application.key),
    ];
    const itself = owner().withKey(created.body.key);
    expect((await itself.request('POST', '/tokens', { body: { data: 'x' } })).status).toBe(201);
    // A failed use of a key is logged too: a key one character off, sent to both processes.
    const wrong = `${created.body.key.slice(0, -1)}${created.body.key.endsWith('A') ? 'B' : 'A'}`;
    secrets.push(wrong);
    for (const url of [env.stack.url, second.url]) expect(await statusAt(url, wrong)).toBe(401);

    const answers = await Promise.all(
      [
        `/applications/${application.id}/keys`,
        `/applications/${application.id}/keys/${created.body.id}`,
        `/applications/${application.id}`,
        '/applications',
        '/logs?size=100',
      ].map(async (path) => (await owner().request('GET', path)).body),
    );
    answers.push((await itself.request('GET', '/applications/key')).body);
    answers.push((await itself.request('GET', `/applications/${application.id}/keys`)).body);

    const pool = env.stack.service.runtime.ownerPool;
    // The audit rows: one per key event, naming the key by its id only.
    const audit = await pool.query<{ row: string }>(
      `SELECT row_to_json(a)::text AS row FROM audit_logs a WHERE tenant_id = $1`,
      [env.tenant.tenantId],
    );
    expect(audit.rows.some((row) => row.row.includes(created.body.id))).toBe(true);
    // The stored event holds the digest (what the key table is rebuilt from), never the key.
    const events = await pool.query<{ data: string }>(
      `SELECT data::text AS data FROM es_events WHERE event_type = 'ApplicationKeyCreated' AND data->>'key_id' = $1`,
      [created.body.id],
    );
    expect(events.rows).toHaveLength(1);
    expect(events.rows[0]!.data).toContain(digestOf(created.body.key));
    expect(events.rows[0]!.data).not.toContain(created.body.key);
    // Kafka: the key events are published (by id), their secrets are not.
    await waitForRelay(pool);
    await expect
      .poll(() => kafka.events.some((delivery) => delivery.event.type.endsWith('.ApplicationKeyCreated')), {
        timeout: 30_000,
      })
      .toBe(true);
    const onKafka = kafka.messages.map((delivery) => `${delivery.key}\n${delivery.raw}`).join('\n');
    expect(onKafka).toContain(created.body.id);

    const places = {
      'GET answers': JSON.stringify(answers),
      logs: env.stack.logs.join('\n'),
      'audit rows': audit.rows.map((row) => row.row).join('\n'),
      Kafka: onKafka,
    };
    expect(places.logs.length).toBeGreaterThan(1000);
    for (const [place, text] of Object.entries(places)) {
      for (const secret of secrets)
        expect(text.includes(secret), `a key or its digest in ${place}`).toBe(false);
    }
  });
});
