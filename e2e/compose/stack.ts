import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { dockerCompose, dockerUnavailableReason, ensureImages } from '../../scripts/compose.mjs';

export const portsFile = new URL('./ports.yml', import.meta.url).pathname;
const composeLocalScript = new URL('../../scripts/compose.mjs', import.meta.url).pathname;

/** A free loopback port (the stack publishes only on 127.0.0.1; 8080 may be taken here). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (!address || typeof address === 'string') throw new Error('no free port');
  return address.port;
}

export interface ComposeStack {
  project: string;
  /** The load balancer, and each gateway's own port: all on 127.0.0.1. */
  url: string;
  gatewayUrls: Record<'api-gateway-1' | 'api-gateway-2', string>;
  mailpitUrl: string;
  /** HAProxy's statistics page (CSV at `${statsUrl};csv`). */
  statsUrl: string;
  /** docker-compose with this stack's files, project and environment; throws on a failure. */
  compose(
    args: string[],
    options?: { allowFailure?: boolean },
  ): { status: number; stdout: string; stderr: string };
  /** The environment the stack runs with (project name, MASTER_KEY, POSTGRES_PASSWORD, ports). */
  env: NodeJS.ProcessEnv;
  /** psql in the postgres container: one value per line. */
  sql(query: string): string[];
  down(): void;
  buildSeconds: number;
}

/**
 * Builds what is missing, brings the stack up from nothing and waits until the load balancer
 * answers. `logLevel`: the services' LOG_LEVEL (default warn), for a spec that reads their logs.
 */
export async function startComposeStack(options: { logLevel?: string } = {}): Promise<ComposeStack> {
  const reason = dockerUnavailableReason();
  if (reason) throw new Error(`the compose tier cannot run: ${reason}`);
  const buildSeconds = ensureImages();
  const project = `tvcompose${randomBytes(3).toString('hex')}`;
  const [httpPort, mailPort] = [await freePort(), await freePort()];
  const env = {
    ...process.env,
    COMPOSE_PROJECT_NAME: project,
    MASTER_KEY: randomBytes(32).toString('base64'),
    POSTGRES_PASSWORD: randomBytes(24).toString('hex'),
    TOKENVAULT_PUBLISH_ADDRESS: '127.0.0.1',
    TOKENVAULT_HTTP_PORT: String(httpPort),
    MAILPIT_UI_PORT: String(mailPort),
    LOG_LEVEL: options.logLevel ?? 'warn',
  };
  const compose: ComposeStack['compose'] = (args, options = {}) => {
    const result = dockerCompose(args, { extraFiles: [portsFile], env, stdio: 'pipe' });
    const answer = { status: result.status ?? 1, stdout: result.stdout ?? '', stderr: result.stderr ?? '' };
    if (answer.status !== 0 && !options.allowFailure)
      throw new Error(
        `docker-compose ${args.join(' ')} exited with ${answer.status}:\n${answer.stderr.slice(-4000)}`,
      );
    return answer;
  };
  // Up, ps and down go through `npm run compose:local`'s script, as the README tells a user to.
  const composeLocal = (args: string[]) => {
    const result = spawnSync(process.execPath, [composeLocalScript, '-f', portsFile, ...args], {
      env,
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    });
    return { status: result.status ?? 1, stdout: result.stdout ?? '', stderr: result.stderr ?? '' };
  };
  const down = () => {
    composeLocal(['--profile', 'tools', 'down', '-v', '--remove-orphans', '--timeout', '5']);
  };
  try {
    const up = composeLocal(['up', '-d']);
    if (up.status !== 0)
      throw new Error(`compose:local up -d exited with ${up.status}:\n${up.stderr.slice(-4000)}`);
    const listed = composeLocal(['ps']).stdout;
    for (const service of [
      'lb',
      'api-gateway-1',
      'api-gateway-2',
      'projector-1',
      'projector-2',
      'worker-1',
      'worker-2',
      'relay',
      'kafka',
      'mailpit',
      'postgres',
      'redis',
    ])
      if (!new RegExp(`_${service}_1 .* Up`).test(listed))
        throw new Error(`compose:local ps does not show ${service} up:\n${listed}`);
    const gatewayUrl = (service: string, port = 8080) => {
      const published = compose(['port', service, String(port)]).stdout.trim();
      if (!published.startsWith('127.0.0.1:')) throw new Error(`${service} is published on ${published}`);
      return `http://${published}`;
    };
    const stack: ComposeStack = {
      project,
      url: `http://127.0.0.1:${httpPort}`,
      gatewayUrls: {
        'api-gateway-1': gatewayUrl('api-gateway-1'),
        'api-gateway-2': gatewayUrl('api-gateway-2'),
      },
      mailpitUrl: `http://127.0.0.1:${mailPort}`,
      statsUrl: `${gatewayUrl('lb', 8404)}/stats`,
      compose,
      env,
      sql: (query) =>
        compose(['exec', '-T', 'postgres', 'psql', '-U', 'postgres', '-d', 'tokenvault', '-Atc', query])
          .stdout.split('\n')
          .filter((line) => line !== ''),
      down,
      buildSeconds,
    };
    await waitFor(
      `the load balancer on ${stack.url}`,
      async () => (await fetch(`${stack.url}/readyz`)).ok,
      180_000,
    );
    return stack;
  } catch (error) {
    const logs = compose(['logs', '--no-color', '--tail', '30'], { allowFailure: true }).stdout;
    down();
    throw new Error(`${(error as Error).message}\n--- last logs ---\n${logs.slice(-8000)}`, { cause: error });
  }
}

/** A tenant made with the admin-cli container's bootstrap, as the README tells a user: its id and key. */
export function bootstrapTenant(
  stack: ComposeStack,
  tenantName: string,
  ownerEmail: string,
): { tenant_id: string; api_key: string } {
  const output = stack.compose([
    'run',
    '--rm',
    '-T',
    'admin-cli',
    'bootstrap',
    '--tenant-name',
    tenantName,
    '--owner-email',
    ownerEmail,
  ]).stdout;
  // The JSON line the command prints (its logs go to stderr).
  const line = output.split('\n').find((printed) => printed.includes('"api_key"'));
  const bootstrapped = JSON.parse(line ?? '{}') as { tenant_id?: string; api_key?: string };
  if (!bootstrapped.tenant_id || !bootstrapped.api_key) throw new Error(`bootstrap printed: ${output}`);
  return { tenant_id: bootstrapped.tenant_id, api_key: bootstrapped.api_key };
}

export async function waitFor(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      if (await check()) return;
    } catch (error) {
      last = error;
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(
    `waited ${timeoutMs} ms for ${what}${last ? ` (last error: ${last instanceof Error ? last.message : JSON.stringify(last)})` : ''}`,
  );
}
