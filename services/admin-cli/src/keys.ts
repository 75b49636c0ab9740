// npm run keys -- <command>: key management (docs/key-management.md). Online: the service keeps
// running; every key operation is an event (no key material) and an audit row.
//   status                                 one JSON line: provider, primary, tenant keys by master key, token keys
//   rewrap                                 re-wraps every tenant key under the primary master key (resumable, batched)
//   rotate-tenant <tenant_id>|--all        a new tenant key version; re-wraps the tenant's token keys under it
//   reencrypt-token <tenant_id> <token_id> seals the token's data under a new token key; destroys the old key
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConfigError, createLogger, loadConfig } from '@tokenvault/platform';
import { notifyInvalidation } from '@tokenvault/cqrs';
import { openRuntimeBase, prepareDatabase, type RuntimeBase } from '@tokenvault/runtime';
import { keysOfTenant } from '@tokenvault/tenancy';
import { reencryptToken } from '@tokenvault/tokens';
import {
  addTenantKeyVersion,
  keyStatus,
  rewrapBatch,
  rewrapTokenKeys,
  tenantKeysStream,
  tenantKeysToRewrap,
  tenantsWithKeys,
  type TenantKeyRewrappedData,
  type TenantKeyRotatedData,
} from '@tokenvault/vault';

const usage =
  'usage: npm run keys -- status | rewrap | rotate-tenant <tenant_id>|--all | reencrypt-token <tenant_id> <token_id>';
const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const batchSize = 500;

/** A progress bar on a terminal (stderr), nothing otherwise: the JSON summary goes to stdout last. */
function progress(label: string, total: number) {
  const tty = process.stderr.isTTY;
  return (done: number) => {
    if (!tty || total === 0) return;
    const width = 30;
    const filled = Math.min(width, Math.round((done / total) * width));
    process.stderr.write(`\r${label} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total}`);
    if (done >= total) process.stderr.write('\n');
  };
}

async function tellEveryProcess(runtime: RuntimeBase, tenantId: string) {
  const client = await runtime.ownerPool.connect();
  try {
    await notifyInvalidation(client, keysOfTenant(tenantId));
  } finally {
    client.release();
  }
}

async function rewrap(runtime: RuntimeBase) {
  const { ring } = runtime.vault;
  const started = Date.now();
  const total = await tenantKeysToRewrap(runtime.ownerPool, ring);
  const show = progress('rewrap', total);
  let done = 0;
  const from: Record<string, number> = {};
  for (;;) {
    const rows = await rewrapBatch(runtime.ownerPool, ring, batchSize);
    if (rows.length === 0) break;
    for (const row of rows) {
      from[row.from] = (from[row.from] ?? 0) + 1;
      const data: TenantKeyRewrappedData = {
        tenant_id: row.tenantId,
        version: row.version,
        master_key_version: ring.primary,
        previous_master_key_version: row.from,
        rewrapped_at: runtime.clock.now().toISOString(),
      };
      await runtime.store.append(
        tenantKeysStream(row.tenantId),
        [{ type: 'TenantKeyRewrapped', data, metadata: { tenant_id: row.tenantId, actor_type: 'system' } }],
        { expectedRevision: 'any' },
      );
      await tellEveryProcess(runtime, row.tenantId);
    }
    done += rows.length;
    show(done);
  }
  const seconds = (Date.now() - started) / 1000;
  return {
    command: 'rewrap',
    primary: ring.primary,
    rewrapped: done,
    from,
    seconds,
    tenant_keys_per_second: seconds > 0 ? Math.round(done / seconds) : done,
  };
}

async function rotateTenant(runtime: RuntimeBase, tenantId: string) {
  const { ring } = runtime.vault;
  const rotated = await addTenantKeyVersion(runtime.ownerPool, ring, tenantId);
  if (!rotated) throw new ConfigError([`tenant ${tenantId}: no keys (no such tenant, or deleted)`]);
  // Every process wraps new token keys under the new version from here; a token key one of them
  // made a moment before under the old version is caught by the passes below.
  await tellEveryProcess(runtime, tenantId);
  let rewrapped = 0;
  for (let pass = 0; pass < 2; pass++) {
    rewrapped += await rewrapTokenKeys(runtime.ownerPool, ring, tenantId, batchSize);
    if (pass === 0) await sleep(1_000);
  }
  const data: TenantKeyRotatedData = {
    tenant_id: tenantId,
    version: rotated.version,
    previous_version: rotated.previous,
    token_keys_rewrapped: rewrapped,
    rotated_at: runtime.clock.now().toISOString(),
  };
  await runtime.store.append(
    tenantKeysStream(tenantId),
    [{ type: 'TenantKeyRotated', data, metadata: { tenant_id: tenantId, actor_type: 'system' } }],
    { expectedRevision: 'any' },
  );
  await tellEveryProcess(runtime, tenantId);
  return {
    tenant_id: tenantId,
    version: rotated.version,
    previous_version: rotated.previous,
    token_keys_rewrapped: rewrapped,
  };
}

async function main(args: string[]) {
  const [command, ...rest] = args;
  if (!command || !['status', 'rewrap', 'rotate-tenant', 'reencrypt-token'].includes(command)) {
    throw new ConfigError([usage]);
  }
  const config = loadConfig({ ...process.env, LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn' });
  const logger = createLogger(config.LOG_LEVEL, 'tokenvault-keys');
  await prepareDatabase(config, logger);
  // rewrap is how a ring stops needing an old version: it must run with every version stored keys need.
  const runtime = await openRuntimeBase(config, logger);
  try {
    switch (command) {
      case 'status':
        return await keyStatus(runtime.ownerPool, runtime.vault.ring);
      case 'rewrap':
        return await rewrap(runtime);
      case 'rotate-tenant': {
        const started = Date.now();
        const tenants: string[] = [];
        if (rest[0] === '--all') {
          for (let after: string | null = null; ;) {
            const page = await tenantsWithKeys(runtime.ownerPool, after, 1000);
            if (page.length === 0) break;
            tenants.push(...page);
            after = page.at(-1)!;
          }
        } else if (rest[0] && uuid.test(rest[0])) {
          tenants.push(rest[0]);
        } else {
          throw new ConfigError([`rotate-tenant: a tenant id (uuid) or --all. ${usage}`]);
        }
        const show = progress('rotate-tenant', tenants.length);
        const results = [];
        for (const tenantId of tenants) {
          results.push(await rotateTenant(runtime, tenantId));
          show(results.length);
        }
        const seconds = (Date.now() - started) / 1000;
        const tokenKeys = results.reduce((sum, result) => sum + result.token_keys_rewrapped, 0);
        return {
          command: 'rotate-tenant',
          tenants: results,
          token_keys_rewrapped: tokenKeys,
          seconds,
          token_keys_per_second: seconds > 0 ? Math.round(tokenKeys / seconds) : tokenKeys,
        };
      }
      case 'reencrypt-token': {
        const [tenantId, tokenId] = rest;
        if (!tenantId || !uuid.test(tenantId) || !tokenId) {
          throw new ConfigError([`reencrypt-token: a tenant id (uuid) and a token id. ${usage}`]);
        }
        const outcome = await reencryptToken(runtime, tenantId, tokenId, {
          actorId: 'system',
          correlationId: randomUUID(),
        });
        return {
          command: 'reencrypt-token',
          tenant_id: tenantId,
          token_id: tokenId,
          reencrypted: outcome.position !== null,
        };
      }
    }
  } finally {
    await runtime.close();
  }
  return undefined;
}

try {
  const summary = await main(process.argv.slice(2));
  process.stdout.write(`${JSON.stringify(summary)}\n`);
} catch (error) {
  if (error instanceof ConfigError) {
    console.error(error.message);
    process.exit(2);
  }
  // A Problem (404 for a token that is not there) or anything else: its message, never data.
  console.error(error instanceof Error ? `${error.name}: ${error.message}` : 'failed');
  process.exit(1);
}
