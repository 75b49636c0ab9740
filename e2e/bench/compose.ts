// `npm run bench:compose`: only the two-gateways-against-one rows (scenarios/compose-gateways.ts),
// on the docker-compose stack; `npm run bench` adds them with BENCH_COMPOSE=1.
import { measureGatewaysOneVsTwo } from './scenarios/compose-gateways.ts';
import { runBench } from './support/lifecycle.ts';
import { failureCount, renderReport } from './support/report.ts';
import { cpus } from 'node:os';

await runBench(async () => {
  const rows = await measureGatewaysOneVsTwo();
  const info = `${cpus().length} CPUs (${cpus()[0]?.model ?? 'unknown'}); the whole stack in containers on this machine`;
  process.stdout.write(renderReport(info, rows, []));
  if (failureCount(rows) > 0) process.exitCode = 1;
});
