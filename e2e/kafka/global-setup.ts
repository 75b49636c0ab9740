// Vitest global setup of the e2e project: one real Kafka broker (infra/kafka) for this test run,
// on free ports with fresh storage of its own, so runs never share a broker or read old messages.
// Stopped (and its storage removed) by the teardown.
import type { TestProject } from 'vitest/node';
import { brokerDir, freePort, startBroker, stopBroker } from '../../infra/kafka/kafka.mjs';

declare module 'vitest' {
  export interface ProvidedContext {
    /** host:port of the test run's broker. */
    kafkaBrokers: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const port = await freePort();
  const controllerPort = await freePort();
  const dir = `${brokerDir(port)}-test`;
  const started = Date.now();
  const { bootstrap } = await startBroker({ port, controllerPort, dir, fresh: true, quiet: true });
  process.stderr.write(`[kafka] test broker on ${bootstrap} ready in ${Date.now() - started} ms\n`);
  project.provide('kafkaBrokers', bootstrap);
  return async () => {
    await stopBroker({ dir, remove: true });
  };
}
