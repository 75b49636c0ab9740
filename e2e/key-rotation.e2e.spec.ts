import { randomBytes } from 'node:crypto';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepareFreshService, type FreshService } from './support/fresh-service.ts';
import { runAdminCli, ServiceExited, startServiceProcess } from './support/service-process.ts';
import { createSoftHsmToken, type SoftHsmToken } from './support/softhsm.ts';

// Master key rotation across restarts, as an operator runs it: tokens made under ring {a}; the
// service restarted on {b,a} reads them and makes new ones under b; `npm run keys -- rewrap`;
// restarted on {b} alone everything reads; restarted on {a} alone it refuses to start, naming b.
// Once with the local keyring (MASTER_KEYS), once with the keys in SoftHSM2 (KEK_PROVIDER=pkcs11).

const projections = process.env.PROJECTIONS === 'async' ? 'async' : 'inline';

/** A fresh service whose processes each start with the keyring the step names. */
interface Flow {
  fresh: FreshService;
  pool: pg.Pool;
}

async function setUp(ringEnv: NodeJS.ProcessEnv): Promise<Flow> {
  const fresh = await prepareFreshService({ tenantName: 'Keys', keyring: ringEnv });
  return { fresh, pool: new pg.Pool({ connectionString: fresh.databaseUrl, max: 2 }) };
}

async function tearDown(flow: Flow | undefined) {
  if (!flow) return;
  await flow.pool.end();
  await flow.fresh.close();
}

/** The admin CLI's `keys.ts` under a keyring. */
const keysCli = (flow: Flow, args: string[], ringEnv: NodeJS.ProcessEnv) =>
  runAdminCli('keys.ts', args, { ...flow.fresh.env, ...ringEnv });

async function start(flow: Flow, ringEnv: NodeJS.ProcessEnv) {
  const service = await flow.fresh.start({ env: ringEnv });
  const call = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${service.url}${path}`, {
      method,
      headers: {
        'svc-api-key': flow.fresh.apiKey,
        ...(body ? { 'content-type': 'application/json' } : {}),
      },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    const text = await response.text();
    return { status: response.status, body: (text ? JSON.parse(text) : {}) as Record<string, unknown>, text };
  };
  return {
    service,
    call,
    async create(data: unknown) {
      const created = await call('POST', '/tokens', { type: 'token', data });
      expect(created.status).toBe(201);
      return String(created.body.id);
    },
    async read(id: string) {
      const read = await call('GET', `/tokens/${id}`);
      expect(read.status).toBe(200);
      return read.body.data;
    },
    stop: () => service.stop(),
  };
}

async function refusesToStart(flow: Flow, ringEnv: NodeJS.ProcessEnv): Promise<string> {
  const error = await startServiceProcess({ ...flow.fresh.env, ...ringEnv }).then(
    async (service) => {
      await service.stop();
      throw new Error('the service started');
    },
    (failure: unknown) => failure,
  );
  expect(error).toBeInstanceOf(ServiceExited);
  expect((error as ServiceExited).code).toBe(2);
  return (error as ServiceExited).output.join('\n');
}

/** The whole rotation, for a ring given as env per set of key ids. */
async function rotationFlow(flow: Flow, ring: (ids: string[]) => NodeJS.ProcessEnv) {
  const first = await start(flow, ring(['a']));
  const old = await first.create({ pan: '4111111111111111' });
  await first.stop();

  const both = await start(flow, ring(['b', 'a']));
  expect(await both.read(old)).toEqual({ pan: '4111111111111111' });
  const fresh = await both.create({ pan: '5500000000000004' });
  await both.stop();

  const before = await keysCli(flow, ['status'], ring(['b', 'a']));
  expect(before).toMatchObject({ primary: 'b', tenant_keys_by_kek: { a: 1 }, token_keys: 2 });
  const rewrap = await keysCli(flow, ['rewrap'], ring(['b', 'a']));
  expect(rewrap).toMatchObject({ command: 'rewrap', primary: 'b', rewrapped: 1, from: { a: 1 } });
  // Resumable: a second run finds nothing left.
  expect(await keysCli(flow, ['rewrap'], ring(['b', 'a']))).toMatchObject({ rewrapped: 0 });
  const after = await keysCli(flow, ['status'], ring(['b']));
  expect(after).toMatchObject({ primary: 'b', tenant_keys_by_kek: { b: 1 }, token_keys: 2 });

  const onlyB = await start(flow, ring(['b']));
  expect(await onlyB.read(old)).toEqual({ pan: '4111111111111111' });
  expect(await onlyB.read(fresh)).toEqual({ pan: '5500000000000004' });
  await onlyB.stop();

  const refusal = await refusesToStart(flow, ring(['a']));
  expect(refusal).toContain('"b"');
  expect(refusal).toMatch(/lacks it/);

  const events = await flow.pool.query<{ event_type: string; data: Record<string, unknown> }>(
    `SELECT event_type, data FROM es_events WHERE event_type = 'TenantKeyRewrapped'`,
  );
  expect(events.rows).toEqual([
    {
      event_type: 'TenantKeyRewrapped',
      data: expect.objectContaining({
        tenant_id: flow.fresh.tenantId,
        master_key_version: 'b',
        previous_master_key_version: 'a',
      }),
    },
  ]);
  return { old, fresh };
}

describe(`master key rotation with MASTER_KEYS (PROJECTIONS=${projections})`, () => {
  const keys = { a: randomBytes(32).toString('base64'), b: randomBytes(32).toString('base64') };
  const ring = (ids: string[]) => ({
    MASTER_KEYS: ids.map((id) => `${id}:${keys[id as 'a' | 'b']}`).join(','),
  });
  let flow: Flow;
  beforeAll(async () => {
    flow = await setUp(ring(['a']));
  });
  afterAll(() => tearDown(flow));

  it(
    '{a} → {b,a} → rewrap → {b} reads everything; {a} alone refuses to start naming b',
    { timeout: 600_000 },
    async () => {
      const { old } = await rotationFlow(flow, ring);
      // Another key under the right name (a restore with the wrong keyring) is refused as well.
      const impostor = await refusesToStart(flow, { MASTER_KEYS: `b:${randomBytes(32).toString('base64')}` });
      expect(impostor).toMatch(/master key version "b" of the local keyring does not open/);

      // rotate-tenant and reencrypt-token, online: the service keeps answering meanwhile.
      const service = await start(flow, ring(['b']));
      const versionsBefore = await flow.pool.query<{ tenant_key_version: number }>(
        'SELECT DISTINCT tenant_key_version FROM token_keys WHERE tenant_id = $1',
        [flow.fresh.tenantId],
      );
      expect(versionsBefore.rows).toEqual([{ tenant_key_version: 1 }]);
      const rotated = await keysCli(flow, ['rotate-tenant', flow.fresh.tenantId], ring(['b']));
      expect(rotated).toMatchObject({ command: 'rotate-tenant', token_keys_rewrapped: 2 });
      const versions = await flow.pool.query<{ version: number; retired: boolean }>(
        'SELECT version, retired_at IS NOT NULL AS retired FROM tenant_keys WHERE tenant_id = $1 ORDER BY version',
        [flow.fresh.tenantId],
      );
      expect(versions.rows).toEqual([
        { version: 1, retired: true },
        { version: 2, retired: false },
      ]);
      const versionsAfter = await flow.pool.query(
        'SELECT 1 FROM token_keys WHERE tenant_id = $1 AND tenant_key_version <> 2',
        [flow.fresh.tenantId],
      );
      expect(versionsAfter.rowCount).toBe(0);
      expect(await service.read(old)).toEqual({ pan: '4111111111111111' });
      const made = await service.create({ after: 'rotation' });
      const newKey = await flow.pool.query<{ tenant_key_version: number }>(
        'SELECT tenant_key_version FROM token_keys WHERE tenant_id = $1 AND token_id = $2',
        [flow.fresh.tenantId, made],
      );
      expect(newKey.rows).toEqual([{ tenant_key_version: 2 }]);

      const keyOf = async (id: string) =>
        (
          await flow.pool.query<{ wrapped_key: string }>(
            'SELECT wrapped_key FROM token_keys WHERE tenant_id = $1 AND token_id = $2',
            [flow.fresh.tenantId, id],
          )
        ).rows[0]?.wrapped_key;
      const oldKey = await keyOf(old);
      const reencrypted = await keysCli(flow, ['reencrypt-token', flow.fresh.tenantId, old], ring(['b']));
      expect(reencrypted).toMatchObject({ command: 'reencrypt-token', reencrypted: true });
      const replacedBy = await keyOf(old);
      expect(replacedBy).toBeDefined();
      expect(replacedBy).not.toBe(oldKey);
      // The running service forgot the old key (NOTIFY) and reads the new ciphertext.
      expect(await service.read(old)).toEqual({ pan: '4111111111111111' });
      const history = await flow.pool.query<{ event_type: string; data: Record<string, unknown> }>(
        `SELECT event_type, data FROM es_events WHERE event_type IN ('TokenReencrypted', 'TenantKeyRotated', 'TenantKeyRewrapped') ORDER BY global_position`,
      );
      expect(history.rows.map((row) => row.event_type)).toEqual([
        'TenantKeyRewrapped',
        'TenantKeyRotated',
        'TokenReencrypted',
      ]);
      // Key operations' events and the audit log hold no key material.
      const wrapped = await flow.pool.query<{ wrapped: string }>(
        `SELECT wrapped_key AS wrapped FROM token_keys UNION ALL SELECT wrapped_data_key FROM tenant_keys UNION ALL SELECT wrapped_fingerprint_key FROM tenant_keys`,
      );
      const eventText = JSON.stringify(history.rows);
      for (const { wrapped: key } of [
        ...wrapped.rows,
        { wrapped: oldKey! },
        { wrapped: keys.a },
        { wrapped: keys.b },
      ]) {
        expect(eventText).not.toContain(key);
        expect(service.service.output.join('\n')).not.toContain(key);
      }
      const audit = await service.call('GET', '/logs?entity_type=tenant');
      expect(audit.text).toContain('rotated');
      for (const { wrapped: key } of wrapped.rows) expect(audit.text).not.toContain(key);
      await service.stop();
    },
  );

  it('MASTER_KEY and MASTER_KEYS together refuse to start', async () => {
    const output = await refusesToStart(flow, { ...ring(['b']), MASTER_KEY: keys.a });
    expect(output).toContain('set either MASTER_KEYS or MASTER_KEY');
  });
});

describe(`master key rotation in an HSM: KEK_PROVIDER=pkcs11 on SoftHSM2 (PROJECTIONS=${projections})`, () => {
  let hsm: SoftHsmToken;
  let flow: Flow;
  let pinFile: string;
  const ring = (ids: string[]) => ({
    ...hsm.env,
    KEK_PROVIDER: 'pkcs11',
    PKCS11_MODULE: hsm.module,
    PKCS11_TOKEN_LABEL: hsm.tokenLabel,
    PKCS11_PIN_FILE: pinFile,
    PKCS11_KEY_LABELS: ids.join(','),
    // Invitation links and the MACs naming idempotency records are keyed by MASTER_KEY, not a
    // tenant key (the records themselves are sealed under the tenant's key).
    MASTER_KEY: invitationKey,
  });
  const invitationKey = randomBytes(32).toString('base64');
  beforeAll(async () => {
    hsm = createSoftHsmToken();
    hsm.generateKey('a');
    hsm.generateKey('b');
    pinFile = join(mkdtempSync(join(tmpdir(), 'tv-pin-')), 'pin');
    writeFileSync(pinFile, `${hsm.pin}\n`, { mode: 0o600 });
    flow = await setUp(ring(['a']));
    // The first run on a machine without SoftHSM2 installs it with apt: minutes.
  }, 600_000);
  afterAll(() => tearDown(flow));

  it(
    '{a} → {b,a} → rewrap → {b} reads everything; {a} alone refuses to start naming b',
    { timeout: 600_000 },
    async () => {
      await rotationFlow(flow, ring);
      const wrapped = await flow.pool.query<{ wrapped_data_key: string }>(
        'SELECT wrapped_data_key FROM tenant_keys',
      );
      // Wrapped inside the HSM (AES-GCM there), not by a key in this process.
      expect(wrapped.rows.every((row) => row.wrapped_data_key.startsWith('p11.'))).toBe(true);
    },
  );

  it('a wrong PIN: the start fails clearly, without the PIN', async () => {
    const { PKCS11_PIN_FILE: _file, ...rest } = ring(['b']);
    const output = await refusesToStart(flow, { ...rest, PKCS11_PIN: '999999' });
    expect(output).toContain('CKR_PIN_INCORRECT');
    expect(output).not.toContain('999999');
  });
});
