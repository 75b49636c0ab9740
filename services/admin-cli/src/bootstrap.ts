// npm run --silent bootstrap -- --tenant-name NAME --owner-email EMAIL [--allow-duplicate]
// Creates a tenant, its owner and a management key with every permission; prints one JSON line.
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { displayName } from '@tokenvault/contracts';
import { checkDependencies, createLogger, loadConfig } from '@tokenvault/platform';
import { bootstrapTenant, tenantsNamedAndOwnedBy } from '@tokenvault/tenancy';
import { exitOnEnvironmentProblem, openRuntimeBase, prepareDatabase } from '@tokenvault/runtime';

const usage = `usage: npm run --silent bootstrap -- --tenant-name NAME --owner-email EMAIL [--allow-duplicate]

Creates a tenant, its owner (a user and an OWNER member) and a management application whose key
holds every permission, and prints one line of JSON: tenant_id, owner_user_id, application_id and
api_key (shown once: only its SHA-256 is kept).

  --tenant-name NAME    the tenant's name
  --owner-email EMAIL   the owner's e-mail address (an existing user of that address is reused)
  --allow-duplicate     make another tenant even when one of that name already has that owner
  -h, --help            this text

Reads the service's variables (DATABASE_URL, MASTER_KEY, …; see the README's Configuration).`;

function parseOptions() {
  try {
    return parseArgs({
      options: {
        'tenant-name': { type: 'string' },
        'owner-email': { type: 'string' },
        'allow-duplicate': { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
      strict: true,
    }).values;
  } catch (error) {
    // An unknown option or a missing value: node's message names it.
    console.error((error as Error).message.split('\n')[0]);
    console.error(usage.split('\n')[0]);
    process.exit(2);
  }
}

const values = parseOptions();
if (values.help) {
  console.log(usage);
  process.exit(0);
}
const input = z
  .object({
    'tenant-name': displayName,
    'owner-email': z.email(),
  })
  .safeParse(values);
if (!input.success) {
  for (const issue of input.error.issues) console.error(`--${issue.path.join('.')}: ${issue.message}`);
  console.error(usage.split('\n')[0]);
  process.exit(2);
}
const tenantName = input.data['tenant-name'];
const ownerEmail = input.data['owner-email'];

// A bad variable or an unreachable database: one line each, exit 2, no stack.
const { config, logger } = await exitOnEnvironmentProblem(async () => {
  const config = loadConfig({ ...process.env, LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn' });
  await checkDependencies(config, ['postgres']);
  // Logs go to stderr: stdout is the one JSON line scripts read.
  const logger = createLogger(config.LOG_LEVEL, 'tokenvault-bootstrap', process.stderr);
  await prepareDatabase(config, logger);
  return { config, logger };
});
const runtime = await openRuntimeBase(config, logger);
try {
  // Run twice (a script retried, a README followed again), bootstrap would make a second tenant.
  const existing = await tenantsNamedAndOwnedBy(runtime.ownerPool, { tenantName, ownerEmail });
  if (existing.length && !values['allow-duplicate']) {
    console.error(
      `--tenant-name: a tenant named ${JSON.stringify(tenantName)} owned by ${ownerEmail} exists already ` +
        `(${existing.join(', ')}); use its key, or run again with --allow-duplicate to make another`,
    );
    process.exitCode = 3;
  } else {
    const result = await bootstrapTenant(runtime.store, runtime.vault, { tenantName, ownerEmail });
    // Make the key usable at once: project what was written (a running service would as well).
    const projector = runtime.createProjector();
    await projector.start();
    const caughtUp = await runtime.consistency.writeReadable(result.position, 30_000);
    if (!caughtUp)
      console.error('warning: the read models have not caught up yet; the key works once they have');
    const { position: _position, ...output } = result;
    process.stdout.write(`${JSON.stringify(output)}\n`);
  }
} finally {
  await runtime.close();
}
