// `npm run bench:keys`: what per-token keys and key rotation cost (docs/performance.md, "Key
// management"). In one run, on this machine and fresh databases (dropped at the end):
// - POST /tokens and GET /tokens/{id} req/s of the same build with per-token keys (the default)
//   and with TOKEN_KEYS=off (data sealed under the tenant key), each service a child process;
// - rewrap throughput (tenant keys/s) with the local ring and with SoftHSM2 (PKCS#11);
// - rotate-tenant on BENCH_KEYS_TOKENS token keys (default 100,000): token keys re-wrapped per second.
// Knobs: BENCH_KEYS_SECONDS (measured seconds per HTTP row, default 5), BENCH_KEYS_TENANTS (2,000).
import { createSecretKey, randomBytes, randomUUID } from 'node:crypto';
import { createTestDatabase, type TestDatabase } from '@tokenvault/platform/testing';
import { createPool, type Pool } from '@tokenvault/platform';
import { allMigrations } from '@tokenvault/runtime';
import {
  LocalKeyring,
  Vault,
  addTenantKeyVersion,
  rewrapBatch,
  rewrapTokenKeys,
  seal,
  Pkcs11Keyring,
  type MasterKeyring,
} from '@tokenvault/vault';
import { runAdminCli, startServiceProcess } from '../support/service-process.ts';
import { createSoftHsmToken } from '../support/softhsm.ts';

const seconds = Number(process.env.BENCH_KEYS_SECONDS ?? 5);
const tenantCount = Number(process.env.BENCH_KEYS_TENANTS ?? 2_000);
const tokenCount = Number(process.env.BENCH_KEYS_TOKENS ?? 100_000);
const connections = 16;
const databases: TestDatabase[] = [];
const rows: { scenario: string; rate: number; unit: string; p50?: number; p99?: number }[] = [];
const log = (text: string) => process.stderr.write(`[bench:keys] ${text}\n`);

/** `connections` loops of one request each, back to back, for `seconds` after a 1 s warm-up. */
async function load(request: (i: number) => Promise<Response>) {
  const latencies: number[] = [];
  let counter = 0;
  let measuring = false;
  const end = Date.now() + 1_000 + seconds * 1_000;
  setTimeout(() => (measuring = true), 1_000);
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (Date.now() < end) {
        const started = performance.now();
        const response = await request(counter++);
        await response.arrayBuffer();
        if (!response.ok) throw new Error(`HTTP ${response.status}`);
        if (measuring) latencies.push(performance.now() - started);
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  return {
    rate: Math.round(latencies.length / seconds),
    p50: Math.round(latencies[Math.floor(latencies.length * 0.5)]!),
    p99: Math.round(latencies[Math.floor(latencies.length * 0.99)]!),
  };
}

async function httpRows(label: string, tokenKeys: 'on' | 'off') {
  const database = await createTestDatabase(allMigrations);
  databases.push(database);
  const { KAFKA_BROKERS: _kafka, ...inherited } = process.env;
  const env = {
    ...inherited,
    NODE_ENV: 'production',
    DATABASE_URL: database.url,
    PORT: '0',
    HOST: '127.0.0.1',
    MASTER_KEY: randomBytes(32).toString('base64'),
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_MINUTE: '10000000',
    QUEUE_PREFIX: `tv-bench-${database.name}`,
    TOKEN_KEYS: tokenKeys,
  };
  const bootstrapped = await runAdminCli(
    'bootstrap.ts',
    ['--tenant-name', 'Bench', '--owner-email', 'bench@example.test'],
    env,
  );
  const service = await startServiceProcess({ ...env, LOG_LEVEL: 'info' });
  try {
    const headers = { 'svc-api-key': String(bootstrapped.api_key), 'content-type': 'application/json' };
    const ids: string[] = [];
    const post = await load(async (i) => {
      const response = await fetch(`${service.url}/tokens`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ type: 'token', data: { name: `Ada ${i}`, email: `ada${i}@example.test` } }),
      });
      const clone = response.clone();
      if (response.ok) ids.push(((await clone.json()) as { id: string }).id);
      return response;
    });
    rows.push({ scenario: `POST /tokens, ${label}`, unit: 'req/s', ...post });
    const get = await load((i) => fetch(`${service.url}/tokens/${ids[i % ids.length]!}`, { headers }));
    rows.push({ scenario: `GET /tokens/{id}, ${label}`, unit: 'req/s', ...get });
  } finally {
    await service.stop();
  }
}

async function freshPool(): Promise<Pool> {
  const database = await createTestDatabase(allMigrations);
  databases.push(database);
  return createPool({ connectionString: database.url, max: 2 });
}

/** Tenant keys made under `from`, then re-wrapped under `to` (its primary), timed. */
async function rewrapRow(label: string, from: MasterKeyring, to: MasterKeyring, count: number) {
  const pool = await freshPool();
  try {
    const vault = new Vault(pool, from);
    for (let i = 0; i < count; i++) await vault.createTenantKeys(randomUUID());
    const started = performance.now();
    let done = 0;
    for (;;) {
      const batch = await rewrapBatch(pool, to, 500);
      if (batch.length === 0) break;
      done += batch.length;
    }
    const elapsed = (performance.now() - started) / 1000;
    rows.push({
      scenario: `rewrap, ${label} (${done} tenant keys)`,
      unit: 'tenant keys/s',
      rate: Math.round(done / elapsed),
    });
  } finally {
    await pool.end();
  }
}

async function rotateTenantRow() {
  const pool = await freshPool();
  const ring = new LocalKeyring([['default', randomBytes(32).toString('base64')]]);
  try {
    const tenantId = randomUUID();
    const vault = new Vault(pool, ring);
    await vault.createTenantKeys(tenantId);
    // The tenant's version-1 data key, to wrap the seeded token keys as the service does.
    const row = await pool.query<{ wrapped_data_key: string }>('SELECT wrapped_data_key FROM tenant_keys');
    const dataKey = createSecretKey(
      await ring.unwrap('default', row.rows[0]!.wrapped_data_key, `data-key:${tenantId}`),
    );
    log(`seeding ${tokenCount} token keys`);
    for (let offset = 0; offset < tokenCount; offset += 10_000) {
      const ids = Array.from({ length: Math.min(10_000, tokenCount - offset) }, () => randomUUID());
      const wrapped = ids.map((id) => seal(dataKey, randomBytes(32), `token-key:${tenantId}:${id}`));
      await pool.query(
        `INSERT INTO token_keys (tenant_id, token_id, wrapped_key, tenant_key_version)
         SELECT $1, id, key, 1 FROM unnest($2::text[], $3::text[]) AS t(id, key)`,
        [tenantId, ids, wrapped],
      );
    }
    const started = performance.now();
    await addTenantKeyVersion(pool, ring, tenantId);
    const done = await rewrapTokenKeys(pool, ring, tenantId, 500);
    const elapsed = (performance.now() - started) / 1000;
    rows.push({
      scenario: `rotate-tenant, ${done} token keys (${elapsed.toFixed(1)} s)`,
      unit: 'token keys/s',
      rate: Math.round(done / elapsed),
    });
  } finally {
    await pool.end();
  }
}

try {
  log('HTTP with and without per-token keys');
  await httpRows('per-token keys', 'on');
  await httpRows('tenant key only (TOKEN_KEYS=off)', 'off');
  const keyA = randomBytes(32).toString('base64');
  const a = new LocalKeyring([['a', keyA]]);
  const ba = new LocalKeyring([
    ['b', randomBytes(32).toString('base64')],
    ['a', keyA],
  ]);
  log(`rewrap of ${tenantCount} tenant keys, local`);
  await rewrapRow('local ring', a, ba, tenantCount);
  log(`rewrap of ${Math.min(tenantCount, 1_000)} tenant keys, SoftHSM2`);
  const hsm = createSoftHsmToken('bench');
  hsm.generateKey('a');
  hsm.generateKey('b');
  process.env.SOFTHSM2_CONF = hsm.env.SOFTHSM2_CONF;
  const hsmOld = new Pkcs11Keyring({
    module: hsm.module,
    tokenLabel: hsm.tokenLabel,
    pin: hsm.pin,
    keyLabels: ['a', 'b'],
  });
  const pool = await freshPool();
  try {
    const vault = new Vault(pool, hsmOld);
    const count = Math.min(tenantCount, 1_000);
    for (let i = 0; i < count; i++) await vault.createTenantKeys(randomUUID());
    await hsmOld.close();
    const hsmNew = new Pkcs11Keyring({
      module: hsm.module,
      tokenLabel: hsm.tokenLabel,
      pin: hsm.pin,
      keyLabels: ['b', 'a'],
    });
    const started = performance.now();
    let done = 0;
    for (;;) {
      const batch = await rewrapBatch(pool, hsmNew, 500);
      if (batch.length === 0) break;
      done += batch.length;
    }
    const elapsed = (performance.now() - started) / 1000;
    rows.push({
      scenario: `rewrap, SoftHSM2 (${done} tenant keys)`,
      unit: 'tenant keys/s',
      rate: Math.round(done / elapsed),
    });
    await hsmNew.close();
  } finally {
    await pool.end();
  }
  log(`rotate-tenant on ${tokenCount} token keys`);
  await rotateTenantRow();
  const width = Math.max(...rows.map((row) => row.scenario.length));
  process.stdout.write(`\n| ${'scenario'.padEnd(width)} |   rate | unit          | p50 ms | p99 ms |\n`);
  process.stdout.write(`| ${'-'.repeat(width)} | -----: | ------------- | -----: | -----: |\n`);
  for (const row of rows) {
    process.stdout.write(
      `| ${row.scenario.padEnd(width)} | ${String(row.rate).padStart(6)} | ${row.unit.padEnd(13)} | ${String(row.p50 ?? '–').padStart(6)} | ${String(row.p99 ?? '–').padStart(6)} |\n`,
    );
  }
  for (const verb of ['POST /tokens', 'GET /tokens/{id}']) {
    const withKeys = rows.find((row) => row.scenario === `${verb}, per-token keys`)!;
    const without = rows.find((row) => row.scenario.startsWith(`${verb}, tenant key only`))!;
    process.stdout.write(
      `${verb}: per-token keys at ${Math.round((withKeys.rate / without.rate) * 100)}% of without (goal ≥ 90%)\n`,
    );
  }
} finally {
  for (const database of databases) await database.drop().catch(() => {});
}
