// An application that provisions others (a deploy pipeline) creates applications and mints keys
// under an Idempotency-Key, as clients do for every POST. Only a key's SHA-256 is kept, so its
// secret is shown once, in its create response. The attacker holds another key of the same
// application (every key acts as it; the idempotency record is the application's) and sends the
// same request again under the same Idempotency-Key, within the 24 hours a record is kept, even
// after the minted key was deleted: the kept response must not hand the secret out again. The same
// for every other answer that holds a secret: a webhook signing secret's rotation, a proxy's key,
// and a reactor's configuration (a processor's credentials), which its create, replace and patch
// answer in plain: replayed after the secret was rotated and the reactor deleted, the kept answer
// would hand out the old secret (issue 48, red team finding 6).
import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import type { TokenvaultClient } from '@tokenvault/sdk';
import { useStack } from '../support/stack.ts';

interface Answer {
  id?: string;
  key?: string;
  type?: string;
  detail?: string;
}

describe('attack: another key of the application replays the request that minted a key', () => {
  // A proxy's destination on this host (never called: the proxy is only created).
  const env = useStack({ PROXY_ALLOWED_PRIVATE_ADDRESSES: '127.0.0.1' });
  let pipelineId: string;
  /** The key the pipeline mints with, and another key of the same application: the attacker's. */
  let minting: TokenvaultClient;
  let attacker: TokenvaultClient;

  beforeAll(async () => {
    const owner = env.tenant.client;
    const pipeline = await owner.request<Answer>('POST', '/applications', {
      body: {
        name: 'Deploy pipeline',
        type: 'management',
        permissions: ['application:create', 'application:read', 'application:update'],
      },
    });
    expect(pipeline.status).toBe(201);
    pipelineId = pipeline.body.id!;
    minting = owner.withKey(pipeline.body.key!);
    const second = await owner.request<Answer>('POST', `/applications/${pipelineId}/keys`);
    expect(second.status).toBe(201);
    attacker = owner.withKey(second.body.key!);
  });

  const idempotent = (client: TokenvaultClient, path: string, key: string, body?: unknown) =>
    client.request<Answer>('POST', path, {
      ...(body === undefined ? {} : { body }),
      headers: { 'idempotency-key': key },
    });

  /** The replay answers neither the secret nor a fresh key: a 409 that says why. */
  const expectNoSecret = (replayed: { status: number; body: Answer }, secret: string) => {
    expect(JSON.stringify(replayed.body)).not.toContain(secret);
    expect(replayed.body.key).toBeUndefined();
    expect(replayed.status).toBe(409);
    expect(replayed.body.type).toMatch(/idempotency-response-not-kept$/);
    expect(replayed.body.detail).toContain('201');
    expect(replayed.body.detail).toContain('API key');
  };

  it('POST /applications replayed by another key of the application does not answer the new key', async () => {
    const key = `provision-${randomBytes(8).toString('hex')}`;
    // What the pipeline holds itself, so that the grant check lets it through.
    const body = { name: 'Auditor', type: 'management', permissions: ['application:read'] };
    const created = await idempotent(minting, '/applications', key, body);
    expect(created.status).toBe(201);
    const secret = created.body.key!;
    expect((await env.tenant.client.withKey(secret).request('GET', '/applications/key')).status).toBe(200);

    expectNoSecret(await idempotent(attacker, '/applications', key, body), secret);
    // Nor to the key that made it: what it did not keep, nobody gets.
    expectNoSecret(await idempotent(minting, '/applications', key, body), secret);
  });

  it('POST /applications/{id}/keys replayed after the minted key’s deletion does not answer it', async () => {
    const key = `mint-${randomBytes(8).toString('hex')}`;
    const path = `/applications/${pipelineId}/keys`;
    const minted = await idempotent(minting, path, key);
    expect(minted.status).toBe(201);
    const secret = minted.body.key!;
    const deleted = await env.tenant.client.request('DELETE', `${path}/${minted.body.id}`);
    expect(deleted.status).toBe(204);
    expect((await env.tenant.client.withKey(secret).request('GET', '/applications/key')).status).toBe(401);

    expectNoSecret(await idempotent(attacker, path, key), secret);
  });

  it('a signing secret’s rotation and a proxy’s create, replayed by another key, do not answer their secret', async () => {
    const owner = env.tenant.client;
    const ops = await owner.request<Answer>('POST', '/applications', {
      body: { name: 'Ops', type: 'private', permissions: ['webhook:update', 'proxy:create', 'proxy:read'] },
    });
    expect(ops.status).toBe(201);
    const first = owner.withKey(ops.body.key!);
    const second = await owner.request<Answer>('POST', `/applications/${ops.body.id}/keys`);
    const other = owner.withKey(second.body.key!);
    const expectWithheld = (replayed: { status: number; body: Answer }, secret: string, why: string) => {
      expect(JSON.stringify(replayed.body)).not.toContain(secret);
      expect(replayed.status).toBe(409);
      expect(replayed.body.type).toMatch(/idempotency-response-not-kept$/);
      expect(replayed.body.detail).toContain(why);
    };

    const rotation = `rotate-${randomBytes(8).toString('hex')}`;
    const rotated = await idempotent(first, '/webhooks/signing-key/rotate', rotation);
    expect(rotated.status).toBe(200);
    expect(rotated.body.key).toMatch(/^whsec_/);
    expectWithheld(
      await idempotent(other, '/webhooks/signing-key/rotate', rotation),
      rotated.body.key!,
      'webhook signing secret',
    );

    const creation = `proxy-${randomBytes(8).toString('hex')}`;
    const proxy = { name: 'Processor', destination_url: 'http://127.0.0.1:9/v1' };
    const created = await idempotent(first, '/proxies', creation, proxy);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expectWithheld(await idempotent(other, '/proxies', creation, proxy), created.body.key!, 'proxy key');
  });

  it('a reactor’s create, replace and patch, replayed by another key after rotation and deletion, do not answer its configuration', async () => {
    const owner = env.tenant.client;
    const payments = await owner.request<Answer>('POST', '/applications', {
      body: {
        name: 'Payments ops',
        type: 'private',
        permissions: ['reactor:create', 'reactor:read', 'reactor:update', 'reactor:delete'],
      },
    });
    expect(payments.status).toBe(201);
    const first = owner.withKey(payments.body.key!);
    const second = await owner.request<Answer>('POST', `/applications/${payments.body.id}/keys`);
    const other = owner.withKey(second.body.key!);
    const formula = await owner.request<Answer>('POST', '/reactor-formulas', {
      body: {
        name: 'Charge',
        type: 'private',
        code: 'module.exports = async (req) => ({ raw: { ok: true } });',
        configuration: [{ name: 'PROCESSOR_SECRET', type: 'string' }],
        request_parameters: [],
      },
    });
    expect(formula.status, JSON.stringify(formula.body)).toBe(201);
    const secretOf = (label: string) => `sk_live_${label}_${randomBytes(12).toString('hex')}`;
    const write = (
      client: TokenvaultClient,
      method: 'POST' | 'PUT' | 'PATCH',
      path: string,
      key: string,
      body: unknown,
    ) => client.request<Answer>(method, path, { body, headers: { 'idempotency-key': key } });
    const expectWithheld = (replayed: { status: number; body: Answer }, secret: string) => {
      expect(JSON.stringify(replayed.body)).not.toContain(secret);
      expect(replayed.status).toBe(409);
      expect(replayed.body.type).toMatch(/idempotency-response-not-kept$/);
      expect(replayed.body.detail).toContain('configuration');
    };

    const createdSecret = secretOf('created');
    const createBody = {
      name: 'Charge',
      formula: { id: formula.body.id },
      configuration: { PROCESSOR_SECRET: createdSecret },
    };
    const creation = `reactor-${randomBytes(8).toString('hex')}`;
    const created = await write(first, 'POST', '/reactors', creation, createBody);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(JSON.stringify(created.body)).toContain(createdSecret);
    const path = `/reactors/${created.body.id}`;

    const replacedSecret = secretOf('replaced');
    const replaceBody = { name: 'Charge', configuration: { PROCESSOR_SECRET: replacedSecret } };
    const replacing = `replace-${randomBytes(8).toString('hex')}`;
    expect((await write(first, 'PUT', path, replacing, replaceBody)).status).toBe(200);

    const patchedSecret = secretOf('patched');
    const patchBody = { configuration: { PROCESSOR_SECRET: patchedSecret } };
    const patching = `patch-${randomBytes(8).toString('hex')}`;
    expect((await write(first, 'PATCH', path, patching, patchBody)).status).toBe(200);

    // Rotated again, then deleted: none of the earlier secrets is anywhere to be read.
    expect(
      (await first.request('PATCH', path, { body: { configuration: { PROCESSOR_SECRET: secretOf('now') } } }))
        .status,
    ).toBe(200);
    expect((await first.request('DELETE', path)).status).toBe(204);

    expectWithheld(await write(other, 'POST', '/reactors', creation, createBody), createdSecret);
    expectWithheld(await write(other, 'PUT', path, replacing, replaceBody), replacedSecret);
    expectWithheld(await write(other, 'PATCH', path, patching, patchBody), patchedSecret);
  });
});
