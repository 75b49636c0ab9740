// npm run verify-log [-- --from-tree-head N:HASH] [--public-key BASE64]: recomputes the event
// log's hash chain (docs/verifiable-log.md). Exit 0: it holds; 1: it does not (the first event and
// tree head that no longer match are named); 2: bad arguments or configuration.
import { parseArgs } from 'node:util';
import { randomBytes, type KeyObject } from 'node:crypto';
import { ConfigError, createLogger, loadConfig } from '@tokenvault/platform';
import { LogSigningKey, publicKeyFrom, verifyLog, type TrustedTreeHead } from '@tokenvault/verifiable-log';
import { connectEventStore } from '@tokenvault/runtime';

function usage(message: string): never {
  console.error(`${message}\nusage: npm run verify-log [-- --from-tree-head N:HASH] [--public-key BASE64]`);
  process.exit(2);
}

let args: { 'from-tree-head'?: string; 'public-key'?: string };
try {
  args = parseArgs({
    options: { 'from-tree-head': { type: 'string' }, 'public-key': { type: 'string' } },
    allowPositionals: false,
  }).values;
} catch (error) {
  usage((error as Error).message);
}

let from: TrustedTreeHead | undefined;
if (args['from-tree-head']) {
  const match = /^(\d+):([0-9a-f]{64})$/.exec(args['from-tree-head']);
  if (!match) {
    usage('--from-tree-head: give the trusted tree head as NUMBER:HASH (its 64 hex digit tree_head_hash)');
  }
  from = { number: Number(match[1]), tree_head_hash: match[2]! };
}

let config: ReturnType<typeof loadConfig>;
try {
  // It decrypts nothing: without MASTER_KEY it runs on a throw-away one (no key file is written,
  // and production does not ask a verifier for the master key).
  config = loadConfig({
    ...process.env,
    MASTER_KEY: process.env.MASTER_KEY ?? randomBytes(32).toString('base64'),
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
  });
} catch (error) {
  if (error instanceof ConfigError) usage(error.message);
  throw error;
}

// The published key when given; else the configured signing key's own (never printed).
let publicKey: KeyObject | undefined;
try {
  if (args['public-key']) publicKey = publicKeyFrom(args['public-key']);
  else if (config.LOG_SIGNING_KEY) publicKey = new LogSigningKey(config.LOG_SIGNING_KEY).publicKey;
} catch {
  usage('--public-key: an Ed25519 public key, base64 of its 32 bytes or PEM');
}

const logger = createLogger(config.LOG_LEVEL, 'tokenvault-verify-log');
const connection = await connectEventStore(config, logger, {
  applicationName: 'tokenvault-verify-log',
  max: 3,
});
const started = performance.now();
const bar = process.stderr.isTTY ? progressBar() : undefined;
try {
  const result = await verifyLog({
    store: connection.store,
    db: connection.pool,
    ...(from ? { from } : {}),
    ...(publicKey ? { publicKey } : {}),
    ...(bar ? { onProgress: bar.update } : {}),
  });
  bar?.finish();
  const seconds = (performance.now() - started) / 1000;
  const rate = Math.round(result.events / Math.max(seconds, 0.001));
  const counted = `${result.treeHeads} tree heads, ${result.events} events in ${seconds.toFixed(2)} s (${rate} events/s)`;
  if (result.ok) {
    const last = result.lastGoodTreeHead;
    console.log(
      `the event log verifies: ${counted}${publicKey ? ', every tree head signed' : ''}` +
        (last ? `; last tree head ${last.number}:${last.tree_head_hash}` : '') +
        (result.uncovered ? `; ${result.uncovered} newer events not covered by a tree head yet` : ''),
    );
    process.exitCode = 0;
  } else {
    const problem = result.problem!;
    console.log(`the event log does NOT verify: ${problem.message}`);
    if (problem.event) {
      console.log(
        `  event: ${problem.event.event_id} at global position ${problem.event.global_position} (${problem.kind})`,
      );
    }
    console.log(`  tree head: ${problem.treeHead.number}:${problem.treeHead.tree_head_hash}`);
    console.log(`  verified before it: ${counted}`);
    process.exitCode = 1;
  }
} finally {
  await connection.close();
}

/** A one-line bar on stderr, redrawn at most ten times a second. */
function progressBar() {
  let drawn = 0;
  const draw = (events: number, total: number) => {
    const width = 30;
    const fraction = total ? Math.min(1, events / total) : 1;
    const filled = Math.round(fraction * width);
    const seconds = (performance.now() - started) / 1000;
    process.stderr.write(
      `\r[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${(fraction * 100).toFixed(0).padStart(3)}% ` +
        `${events}/${total} events, ${Math.round(events / Math.max(seconds, 0.001))} events/s `,
    );
  };
  let last = { events: 0, total: 0 };
  return {
    update: (progress: { events: number; totalEvents: number }) => {
      last = { events: progress.events, total: progress.totalEvents };
      const now = performance.now();
      if (now - drawn < 100) return;
      drawn = now;
      draw(last.events, last.total);
    },
    finish: () => {
      if (drawn) {
        draw(last.events, last.total);
        process.stderr.write('\n');
      }
    },
  };
}
