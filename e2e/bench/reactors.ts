// The reactor rows of `npm run bench` alone, beside the bare GET they are compared with (what a
// change to the reactor runtime is measured with; docs/performance.md). Same stack, knobs and
// report as `npm run bench`: `npm run node -- --deps e2e/bench/reactors.ts`.
import { measureBareGet, measureBareInsert } from './scenarios/http-vs-baseline.ts';
import { measureReactors } from './scenarios/reactors.ts';
import { databaseUrl } from './support/databases.ts';
import { runBench } from './support/lifecycle.ts';
import { log } from './support/log.ts';
import { failureCount, machineInfo, p99Target, rateRatioTarget, renderReport } from './support/report.ts';
import { startStack } from './support/stack.ts';

async function main(): Promise<void> {
  const info = await machineInfo(databaseUrl('postgres'));
  const stack = await startStack();
  try {
    // The bare INSERTs seed the rows the bare GET reads.
    const bareInsert = await measureBareInsert(stack);
    const bareGet = (await measureBareGet(stack, bareInsert.ids)).row;
    const reactors = await measureReactors(stack);
    const rows = [bareGet, reactors.trivial, reactors.cardToken, reactors.sandboxAlone];
    const targets = [
      rateRatioTarget('trivial reactor ÷ bare GET (req/s)', reactors.trivial, bareGet, 30),
      p99Target(reactors.trivial, 25),
      p99Target(reactors.cardToken, 30),
    ];
    process.stdout.write(renderReport(info, rows, targets));
    const serviceLogs = stack.service.output().trim();
    if (serviceLogs) log(`the service logged (warn and above, last lines):\n${serviceLogs.slice(-4_000)}`);
    if (failureCount(rows) > 0) process.exitCode = 1;
  } finally {
    await stack.close();
  }
}

await runBench(main);
