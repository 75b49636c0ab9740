// The benchmark's knobs, read once from the environment:
// BENCH_DURATION_S (10), BENCH_WARMUP_S (2), BENCH_CONNECTIONS (16), BENCH_APPENDERS (16),
// DATABASE_POOL_SIZE (10), BENCH_POSTGRES_URL (unset: the bench runs a PostgreSQL cluster of its own, see postgres-server.ts; set, the server to use instead, e.g. postgres://postgres@127.0.0.1:5432),
// BENCH_CPU_PROFILE_DIR (unset: when set, the service and the baseline run with --inspect and each measured HTTP run's CPU profile is saved there, see cpu-profile.ts),
// BENCH_KAFKA (1: start a Kafka broker with infra/kafka and measure the relay; 0 skips it),
// BENCH_READ_MODELS (1: the read models at size, 10,000 children, 1,000,000 log rows and 1,000,000 tokens; 0 skips them),
// BENCH_LOG_EVENTS (100000: events appended for the tree-head signer's and verify-log's rates),
// BENCH_GROUPS (all: a comma list of session, bulk, reactors, proxy, appends, tree-heads, webhooks to run besides the HTTP rows and the projection lag, which always run; `http` alone runs only those),
// BENCH_COMPOSE (0: 1 adds two gateways against one behind the load balancer of the docker-compose stack, as `npm run bench:compose` measures alone).
const benchGroups = ['session', 'bulk', 'reactors', 'proxy', 'appends', 'tree-heads', 'webhooks'] as const;
export type BenchGroup = (typeof benchGroups)[number];

export const settings = {
  durationS: positiveInt('BENCH_DURATION_S', 10),
  warmupS: positiveInt('BENCH_WARMUP_S', 2),
  connections: positiveInt('BENCH_CONNECTIONS', 16),
  appenders: positiveInt('BENCH_APPENDERS', 16),
  poolSize: positiveInt('DATABASE_POOL_SIZE', 10),
  postgresUrl: process.env.BENCH_POSTGRES_URL || undefined,
  cpuProfileDir: process.env.BENCH_CPU_PROFILE_DIR,
  kafka: process.env.BENCH_KAFKA !== '0',
  readModels: process.env.BENCH_READ_MODELS !== '0',
  logEvents: positiveInt('BENCH_LOG_EVENTS', 100_000),
  compose: process.env.BENCH_COMPOSE === '1',
  groups: groupsOf('BENCH_GROUPS'),
};

function groupsOf(name: string): ReadonlySet<BenchGroup> {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return new Set(benchGroups);
  const groups = raw
    .split(',')
    .map((group) => group.trim())
    .filter((group) => group !== '' && group !== 'http');
  const unknown = groups.filter((group) => !(benchGroups as readonly string[]).includes(group));
  if (unknown.length > 0)
    throw new Error(`${name}: unknown group(s) ${unknown.join(', ')}; known: ${benchGroups.join(', ')}`);
  return new Set(groups as BenchGroup[]);
}

function positiveInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 1)
    throw new Error(`${name} must be a positive integer, got ${raw}`);
  return value;
}
