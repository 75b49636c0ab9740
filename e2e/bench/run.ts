// `npm run bench`: throughput and latency of the service against a bare express + pg baseline,
// event-store append rate, projection lag, reactors, read models at size and the Kafka relay.
// Everything runs on this machine (127.0.0.1 only), on fresh databases that are dropped at the
// end. See docs/performance.md for the method, and support/settings.ts for the knobs.
//
// This driver runs the scenario groups (scenarios/) in a fixed order on one stack
// (support/stack.ts), then prints the report (support/report.ts), whose row order differs.
import { measureBulk } from './scenarios/bulk.ts';
import { measureEventStoreAppends } from './scenarios/event-store-append.ts';
import {
  measureBareGet,
  measureBareInsert,
  measureGetToken,
  measureGetTokenWithSession,
  measureOtherProjectionMode,
  measurePostTokens,
} from './scenarios/http-vs-baseline.ts';
import { measureKafkaRelay } from './scenarios/kafka.ts';
import {
  measurePostTokensWithAndWithoutTreeHeads,
  measureTreeHeadLag,
  measureTreeHeadsAndVerify,
} from './scenarios/tree-heads.ts';
import { measureGatewaysOneVsTwo } from './scenarios/compose-gateways.ts';
import { measureGetTokenOneVsTwoHttpProcesses } from './scenarios/http-processes.ts';
import { startProjectionLagRecording } from './scenarios/projection-lag.ts';
import { measureReactors } from './scenarios/reactors.ts';
import { addedP99Target, measureProxy } from './scenarios/proxy.ts';
import { measureReadModelsAtSize, readModelP99TargetMs } from './scenarios/read-models.ts';
import { measureWebhookDeliveries } from './scenarios/webhooks.ts';
import { databaseUrl } from './support/databases.ts';
import { startKafkaBroker } from './support/kafka-broker.ts';
import { runBench } from './support/lifecycle.ts';
import { log } from './support/log.ts';
import { startPostgresServer } from './support/postgres-server.ts';
import { profileSummaries } from './support/cpu-profile.ts';
import {
  failureCount,
  machineInfo,
  p99Target,
  rateRatioTarget,
  renderProfiles,
  renderReport,
} from './support/report.ts';
import { settings, type BenchGroup } from './support/settings.ts';
import { startStack } from './support/stack.ts';

async function main(): Promise<void> {
  await startPostgresServer();
  const info = await machineInfo(databaseUrl('postgres'));
  // Starts while the stack does; undefined with BENCH_KAFKA=0 or when no broker can run here.
  const kafkaBroker = startKafkaBroker();
  const stack = await startStack();
  const runs = (group: BenchGroup) => settings.groups.has(group);
  try {
    // The HTTP rows always run: the other groups load the ids and the windows they leave.
    const bareInsert = await measureBareInsert(stack);
    // Started before the warm-up so that it has seen every checkpoint up to the measured window.
    const projectionLagRecording = await startProjectionLagRecording(stack);
    const postTokens = await measurePostTokens(stack);
    const projectionLag = await projectionLagRecording.measure(postTokens.window);
    const treeHeadLag = runs('tree-heads') ? await measureTreeHeadLag(stack, postTokens.window) : undefined;
    const bareGet = (await measureBareGet(stack, bareInsert.ids)).row;
    const getToken = (await measureGetToken(stack, postTokens.ids)).row;
    // Right after the key's run, on the same ids: a session instead of a key.
    const getTokenWithSession = runs('session')
      ? (await measureGetTokenWithSession(stack, postTokens.ids)).row
      : undefined;
    // The same write and read in the other PROJECTIONS mode, on a service and database of their own.
    const otherMode = await measureOtherProjectionMode(stack);
    // Beside the single creates of this run: 100 tokens per call, then 100 of its tokens per read.
    const bulk = runs('bulk') ? await measureBulk(stack, postTokens.row, postTokens.ids) : undefined;
    // In the same run as the bare GET, with the sandbox alone beside.
    const reactors = runs('reactors') ? await measureReactors(stack) : undefined;
    const proxy = runs('proxy') ? await measureProxy(stack) : undefined;
    const readModels = settings.readModels ? await measureReadModelsAtSize(stack) : [];
    // The HTTP servers are idle from here on; the appends run on the bare database.
    const appends = runs('appends') ? await measureEventStoreAppends(stack.bareDatabaseUrl) : [];
    const treeHeadsAndVerify = runs('tree-heads')
      ? await measureTreeHeadsAndVerify(stack.bareDatabaseUrl)
      : [];
    const broker = await kafkaBroker;
    const kafka = broker ? await measureKafkaRelay(stack, broker) : [];
    const webhooks = runs('webhooks') ? await measureWebhookDeliveries(stack) : [];
    // These restart the service: one HTTP process against two, then tree heads off and on.
    const httpProcesses = await measureGetTokenOneVsTwoHttpProcesses(stack, postTokens.ids);
    const treeHeads = runs('tree-heads') ? await measurePostTokensWithAndWithoutTreeHeads(stack) : undefined;
    const compose = settings.compose ? await measureGatewaysOneVsTwo() : [];

    const rows = [
      postTokens.row,
      bareInsert.row,
      getToken,
      getTokenWithSession,
      bareGet,
      otherMode.post.row,
      otherMode.get.row,
      bulk?.tokenize.row,
      bulk?.detokenize?.row,
      ...appends,
      projectionLag,
      reactors?.trivial,
      reactors?.cardToken,
      reactors?.sandboxAlone,
      proxy?.direct,
      proxy?.proxied,
      proxy?.transformed,
      ...readModels,
      ...kafka,
      ...webhooks,
      treeHeadLag,
      ...treeHeadsAndVerify,
      treeHeads?.off.row,
      treeHeads?.on.row,
      ...httpProcesses,
      ...compose,
    ].filter((row) => row !== undefined);
    const targets = [
      rateRatioTarget('POST /tokens ÷ bare INSERT (req/s)', postTokens.row, bareInsert.row, 50),
      rateRatioTarget('GET /tokens/{id} ÷ bare GET (req/s)', getToken, bareGet, 60),
      getTokenWithSession &&
        rateRatioTarget('GET /tokens/{id}, session ÷ key (req/s)', getTokenWithSession, getToken, 90),
      p99Target(projectionLag, 50, 'projection lag p99'),
      reactors && rateRatioTarget('trivial reactor ÷ bare GET (req/s)', reactors.trivial, bareGet, 30),
      reactors && p99Target(reactors.trivial, 25),
      reactors && p99Target(reactors.cardToken, 30),
      proxy && rateRatioTarget('proxy ÷ direct (req/s)', proxy.proxied, proxy.direct, 50),
      proxy && addedP99Target(proxy.proxied, proxy.direct, 10),
      proxy && addedP99Target(proxy.transformed, proxy.direct, 25),
      ...readModels.map((row) => p99Target(row, readModelP99TargetMs(row))),
      treeHeadLag && p99Target(treeHeadLag, 1_000, 'tree-head lag p99'),
      treeHeads &&
        rateRatioTarget('POST /tokens tree heads on ÷ off (req/s)', treeHeads.on.row, treeHeads.off.row, 95),
    ].filter((target) => target !== undefined);
    process.stdout.write(renderReport(info, rows, targets) + renderProfiles(profileSummaries()));
    const serviceLogs = stack.service.output().trim();
    if (serviceLogs) log(`the service logged (warn and above, last lines):\n${serviceLogs.slice(-2_000)}`);
    if (failureCount(rows) > 0) process.exitCode = 1;
  } finally {
    await stack.close();
  }
}

await runBench(main);
