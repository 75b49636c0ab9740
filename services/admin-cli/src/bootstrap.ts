// npm run --silent bootstrap -- --tenant-name NAME --owner-email EMAIL
// Creates a tenant, its owner and a management key with every permission; prints one JSON line.
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { displayName } from '@tokenvault/contracts';
import { createLogger, loadConfig } from '@tokenvault/platform';
import { bootstrapTenant } from '@tokenvault/tenancy';
import { openRuntimeBase, prepareDatabase } from '@tokenvault/runtime';

const { values } = parseArgs({
  options: { 'tenant-name': { type: 'string' }, 'owner-email': { type: 'string' } },
  strict: true,
});
const input = z
  .object({
    'tenant-name': displayName,
    'owner-email': z.email(),
  })
  .safeParse(values);
if (!input.success) {
  for (const issue of input.error.issues) console.error(`--${issue.path.join('.')}: ${issue.message}`);
  console.error('usage: npm run --silent bootstrap -- --tenant-name NAME --owner-email EMAIL');
  process.exit(2);
}

const config = loadConfig({ ...process.env, LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn' });
// Logs go to stderr: stdout is the one JSON line scripts read.
const logger = createLogger(config.LOG_LEVEL, 'tokenvault-bootstrap', process.stderr);
await prepareDatabase(config, logger);
const runtime = await openRuntimeBase(config, logger);
try {
  const result = await bootstrapTenant(runtime.store, runtime.vault, {
    tenantName: input.data['tenant-name'],
    ownerEmail: input.data['owner-email'],
  });
  // Make the key usable at once: project what was written (a running service would as well).
  const projector = runtime.createProjector();
  await projector.start();
  const caughtUp = await runtime.consistency.writeReadable(result.position, 30_000);
  if (!caughtUp)
    console.error('warning: the read models have not caught up yet; the key works once they have');
  const { position: _position, ...output } = result;
  process.stdout.write(`${JSON.stringify(output)}\n`);
} finally {
  await runtime.close();
}
