// Deleting a token shreds its data: its key is destroyed, and nothing the service keeps may give
// the number back. An attacker (here: the tenant's own key, or whoever gets hold of it later)
// replays an earlier reactor call under its Idempotency-Key, or reads an async reactor result,
// after the token was deleted. And an operator's backup of Redis, read with the master key alone,
// must not open what a deleted tenant left there.
import { createDecipheriv, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { eventually } from '@tokenvault/platform/testing';
import { derivedKey, openMasterKeyring, TenantKeysUnavailableError, Vault } from '@tokenvault/vault';
import { uniqueCardNumber } from '../support/cards.ts';
import { createReactor, echoArgs } from '../support/reactors.ts';
import { everyRedisValue } from '../support/redis.ts';
import { useStack, type TestTenant } from '../support/stack.ts';

interface Answer {
  status?: number;
  type?: string;
  detail?: string;
  raw?: { number?: string };
  result?: { raw?: { number?: string } };
  async_reactor_request_id?: string;
  key?: string;
}

describe('attack: token data comes back from what the service kept of a response', () => {
  const env = useStack();

  /** A card token of the tenant, with a number of its own. */
  const cardOf = async (tenant: TestTenant) => {
    const number = uniqueCardNumber();
    const card = await tenant.client.tokens.create({
      type: 'card',
      data: { number, expiration_month: 4, expiration_year: 2031 },
    });
    return { number, card };
  };

  /** A card token of the tenant, and a reactor that answers the card number it is given. */
  const cardAndReactor = async (tenant: TestTenant) => {
    const { number, card } = await cardOf(tenant);
    const reactorId = await createReactor(tenant, {
      code: echoArgs,
      request_parameters: [{ name: 'number', type: 'string' }],
    });
    const args = { number: `{{ ${card.id} | json: '$.number' }}` };
    return { number, cardId: card.id, reactorId, args };
  };

  const react = (tenant: TestTenant, reactorId: string, args: unknown, key: string, mode = 'react') =>
    tenant.client.request<Answer>('POST', `/reactors/${reactorId}/${mode}`, {
      body: { args },
      headers: { 'idempotency-key': key },
    });

  const deleteToken = async (tenant: TestTenant, id: string) => {
    expect((await tenant.client.request('DELETE', `/tokens/${id}`)).status).toBe(204);
    expect((await tenant.client.request('GET', `/tokens/${id}`)).status).toBe(404);
  };

  it('a reactor call replayed under its Idempotency-Key after the token’s deletion does not answer the number', async () => {
    const { number, cardId, reactorId, args } = await cardAndReactor(env.tenant);
    const key = `charge-${randomBytes(8).toString('hex')}`;
    const first = await react(env.tenant, reactorId, args, key);
    expect(first.status).toBe(200);
    expect(first.body.raw?.number).toBe(number);

    await deleteToken(env.tenant, cardId);
    const replayed = await react(env.tenant, reactorId, args, key);
    expect(JSON.stringify(replayed.body)).not.toContain(number);
    // Not run again either: the first request completed; a new key runs it (and finds no token).
    expect(replayed.status).toBe(409);
    expect(replayed.body.type).toMatch(/idempotency-response-not-kept$/);
    expect(replayed.body.detail).toContain('200');
    expect((await react(env.tenant, reactorId, args, `${key}-new`)).status).toBe(400);
  });

  /** Queues a run, waits for its result to answer the number: the result's path and run id. */
  const asyncResult = async (tenant: TestTenant, reactorId: string, args: unknown, number: string) => {
    const queued = await react(
      tenant,
      reactorId,
      args,
      `async-${randomBytes(8).toString('hex')}`,
      'react-async',
    );
    expect(queued.status).toBe(202);
    const runId = queued.body.async_reactor_request_id!;
    const path = `/reactors/${reactorId}/results/${runId}`;
    await eventually(async () => {
      const result = await tenant.client.request<Answer>('GET', path);
      expect(result.body.result?.raw?.number).toBe(number);
    });
    return { path, runId };
  };

  /** The fields of an async run's job in Redis (BullMQ's hash): none once it is removed. */
  const jobFields = async (runId: string): Promise<Record<string, string>> => {
    const { config } = env.stack;
    const [, ...fields] = await everyRedisValue(
      config.REDIS_URL,
      `${config.QUEUE_PREFIX}:reactor-run:${runId}`,
    );
    const entries: [string, string][] = [];
    for (let index = 0; index + 1 < fields.length; index += 2)
      entries.push([fields[index]!, fields[index + 1]!]);
    return Object.fromEntries(entries);
  };

  it('an async reactor result read after the token’s deletion does not answer the number', async () => {
    const { number, cardId, reactorId, args } = await cardAndReactor(env.tenant);
    const { path, runId } = await asyncResult(env.tenant, reactorId, args, number);
    // The run is over: its job keeps the result only, not the detokenized args it was given.
    const data = JSON.parse((await jobFields(runId)).data!) as { sealed_request: string };
    expect(data.sealed_request).toBe('');

    await deleteToken(env.tenant, cardId);
    const after = await env.tenant.client.request<Answer>('GET', path);
    expect(JSON.stringify(after.body)).not.toContain(number);
    expect(after.status).toBe(404);
    expect(await jobFields(runId)).toEqual({});
  });

  it('an async result of a reactor that read the card through svc is withdrawn with the token too', async () => {
    const { number, card } = await cardOf(env.tenant);
    const reader = await env.tenant.client.applications.create({
      name: 'Card reader',
      type: 'private',
      permissions: ['token:read'],
    });
    const reactorId = await createReactor(
      env.tenant,
      {
        code: `module.exports = async function (req) {
          const token = await req.svc.tokens.retrieve(req.args.id);
          return { raw: { number: token.data.number } };
        };`,
        request_parameters: [{ name: 'id', type: 'string' }],
      },
      { applicationId: reader.id },
    );
    const { path } = await asyncResult(env.tenant, reactorId, { id: card.id }, number);
    await deleteToken(env.tenant, card.id);
    const after = await env.tenant.client.request<Answer>('GET', path);
    expect(JSON.stringify(after.body)).not.toContain(number);
    expect(after.status).toBe(404);
  });

  it('after the tenant’s deletion, nothing it left under the idempotency prefix opens with the master key', async () => {
    const doomed = await env.stack.createTenant('Doomed');
    const { number, reactorId, args } = await cardAndReactor(doomed);
    const keys = [`react-${randomBytes(8).toString('hex')}`, `app-${randomBytes(8).toString('hex')}`];
    expect((await react(doomed, reactorId, args, keys[0]!)).body.raw?.number).toBe(number);
    // A response that is kept: an application's create answers its API key.
    const application = await doomed.client.request<Answer>('POST', '/applications', {
      body: { name: 'Kept', type: 'private', permissions: ['token:read'] },
      headers: { 'idempotency-key': keys[1]! },
    });
    expect(application.status).toBe(201);
    const { runId } = await asyncResult(doomed, reactorId, args, number);

    expect((await doomed.client.request('DELETE', '/tenants/self')).status).toBe(204);
    const { config } = env.stack;

    // What the idempotency guard sealed its records with before: a key derived from MASTER_KEY.
    const masterDerived = derivedKey(config.MASTER_KEY, 'response seal v1', 'tokenvault/idempotency');
    const openWithMasterKey = (sealed: string, scope: string) => {
      const bytes = Buffer.from(sealed, 'base64');
      const decipher = createDecipheriv('aes-256-gcm', masterDerived, bytes.subarray(0, 12));
      decipher.setAAD(Buffer.from(scope, 'utf8'));
      decipher.setAuthTag(bytes.subarray(12, 28));
      return Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]).toString('utf8');
    };
    const records = (await everyRedisValue(config.REDIS_URL, `${config.QUEUE_PREFIX}:idempotency:*`)).filter(
      (value) => value.startsWith('d|'),
    );
    expect(records.length).toBeGreaterThanOrEqual(2);
    const opened: string[] = [];
    for (const record of records) {
      const sealed = record.split('|')[2]!;
      for (const key of keys) {
        try {
          opened.push(openWithMasterKey(sealed, `${doomed.tenantId}\0${doomed.applicationId}\0${key}`));
        } catch {
          // Does not open under this scope, or with this key at all.
        }
      }
    }
    expect(opened.filter((text) => text.includes(number) || text.includes(application.body.key!))).toEqual(
      [],
    );
    expect(opened).toEqual([]);

    // The master keyring alone, as an operator holds it: the tenant's keys went with the tenant,
    // so neither those records nor its async reactor result open any more.
    const vault = new Vault(env.stack.service.runtime.ownerPool, openMasterKeyring(config));
    const result = JSON.parse((await jobFields(runId)).returnvalue!) as string;
    for (const sealed of [...records.map((record) => record.split('|')[2]!), result]) {
      await expect(vault.decrypt(doomed.tenantId, 'any', sealed)).rejects.toThrow(TenantKeysUnavailableError);
    }
  });
});
