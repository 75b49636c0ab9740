// Two gateways against one, behind the load balancer of docker-compose.yml: POST /tokens and
// GET /tokens/{id} through HAProxy with both api-gateway replicas, then with api-gateway-2
// stopped, in the same run on the same stack (scripts/compose.mjs's local images). Each row's note
// gives the CPU seconds each container used during the measured run (from its cgroup), so the
// split between the gateways, PostgreSQL and the rest shows where the time goes.
import { readFileSync, existsSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { startComposeStack, waitFor, type ComposeStack } from '../../compose/stack.ts';
import { measureHttp, type HttpScenario } from '../support/measure.ts';
import type { Row } from '../support/report.ts';

const tokenBody = JSON.stringify({
  type: 'token',
  data: { name: 'Ada Lovelace', email: 'ada@example.test' },
});

/** CPU nanoseconds used so far by each service's containers (cgroup v1 or v2). */
function cpuByService(stack: ComposeStack): Map<string, number> {
  const ids = stack.compose(['ps', '-q']).stdout.split('\n').filter(Boolean);
  const described = execFileSync(
    'docker',
    ['inspect', '-f', '{{.Id}} {{index .Config.Labels "com.docker.compose.service"}}', ...ids],
    { encoding: 'utf8' },
  );
  const usage = new Map<string, number>();
  for (const line of described.split('\n').filter(Boolean)) {
    const [id, service = '?'] = line.split(' ');
    const v1 = `/sys/fs/cgroup/cpuacct/docker/${id}/cpuacct.usage`;
    const v2 = `/sys/fs/cgroup/system.slice/docker-${id}.scope/cpu.stat`;
    let ns = 0;
    if (existsSync(v1)) ns = Number(readFileSync(v1, 'utf8'));
    else if (existsSync(v2)) ns = Number(/usage_usec (\d+)/.exec(readFileSync(v2, 'utf8'))?.[1] ?? 0) * 1_000;
    usage.set(service, (usage.get(service) ?? 0) + ns);
  }
  return usage;
}

/** Busy and total jiffies of the whole machine (/proc/stat): how much of it others used meanwhile. */
function hostCpu(): { busy: number; total: number } {
  const fields = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '')
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  const total = fields.reduce((sum, value) => sum + value, 0);
  const idle = (fields[3] ?? 0) + (fields[4] ?? 0);
  return { busy: total - idle, total };
}

async function measureWithCpu(stack: ComposeStack, scenario: HttpScenario): Promise<Row> {
  let before = new Map<string, number>();
  let hostBefore = hostCpu();
  let loadBefore = process.cpuUsage();
  let startedAt = 0;
  const measured = await measureHttp(scenario, {
    beforeMeasured: () => {
      before = cpuByService(stack);
      hostBefore = hostCpu();
      loadBefore = process.cpuUsage();
      startedAt = Date.now();
    },
  });
  const seconds = (Date.now() - startedAt) / 1000;
  const load = process.cpuUsage(loadBefore);
  const host = hostCpu();
  const after = cpuByService(stack);
  const used = [...after]
    .map(([service, ns]) => [service, (ns - (before.get(service) ?? 0)) / 1e9] as const)
    .filter(([, cpu]) => cpu >= 0.05)
    .sort((a, b) => b[1] - a[1]);
  const stackCpu = used.reduce((sum, [, cpu]) => sum + cpu, 0);
  const hostBusy = (host.busy - hostBefore.busy) / (host.total - hostBefore.total);
  const split =
    `CPU s over ${seconds.toFixed(1)} s: ${used.map(([service, cpu]) => `${service} ${cpu.toFixed(1)}`).join(', ')}` +
    `, load generator ${((load.user + load.system) / 1e6).toFixed(1)}; the stack ${stackCpu.toFixed(1)} s, ` +
    `the machine ${(hostBusy * 100).toFixed(0)}% busy`;
  return { ...measured.row, note: [measured.row.note, split].filter(Boolean).join('; ') };
}

export async function measureGatewaysOneVsTwo(): Promise<Row[]> {
  const stack = await startComposeStack();
  try {
    const output = stack.compose([
      'run',
      '--rm',
      '-T',
      'admin-cli',
      'bootstrap',
      '--tenant-name',
      'Bench',
      '--owner-email',
      'bench@example.test',
    ]).stdout;
    const apiKey = (JSON.parse(output.trim().split('\n').at(-1) ?? '{}') as { api_key: string }).api_key;
    const auth = { 'svc-api-key': apiKey };
    const rows: Row[] = [];
    for (const gateways of [2, 1]) {
      if (gateways === 1) {
        stack.compose(['stop', '--timeout', '5', 'api-gateway-2']);
        // HAProxy takes it out after two failed checks a second apart; then only one answers.
        await new Promise((resolve) => setTimeout(resolve, 3_000));
      }
      await waitFor('the load balancer', async () => (await fetch(`${stack.url}/readyz`)).ok);
      const ids: string[] = [];
      rows.push(
        await measureWithCpu(stack, {
          name: `POST /tokens via the load balancer, ${gateways} gateway${gateways > 1 ? 's' : ''}`,
          url: `${stack.url}/tokens`,
          method: 'POST',
          headers: auth,
          body: tokenBody,
          onResponse: (status, body) => {
            if (status === 201) ids.push((JSON.parse(body) as { id: string }).id);
          },
        }),
      );
      let next = 0;
      rows.push(
        await measureWithCpu(stack, {
          name: `GET /tokens/{id} via the load balancer, ${gateways} gateway${gateways > 1 ? 's' : ''}`,
          url: `${stack.url}/tokens`,
          method: 'GET',
          headers: auth,
          nextPath: () => `/tokens/${ids[next++ % ids.length] ?? 'none'}`,
        }),
      );
    }
    return rows;
  } finally {
    stack.down();
  }
}
