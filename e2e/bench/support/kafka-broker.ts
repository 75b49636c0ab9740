// The bench's own Kafka broker (infra/kafka), detached from the bench process: lifecycle.ts stops
// it at the end, or kills it if the bench exits first.
import { brokerDir, startBroker, stopBroker } from '../../../infra/kafka/kafka.mjs';
import { log } from './log.ts';
import { freePort } from './processes.ts';
import { settings } from './settings.ts';

export interface KafkaBroker {
  bootstrap: string;
  dir: string;
  pid: number;
}
let kafkaBroker: KafkaBroker | undefined;

/** Undefined when BENCH_KAFKA=0 or Kafka cannot run here. */
export async function startKafkaBroker(): Promise<KafkaBroker | undefined> {
  if (!settings.kafka) return undefined;
  try {
    const port = await freePort();
    const dir = `${brokerDir(port)}-bench`;
    const { bootstrap, pid } = await startBroker({
      port,
      controllerPort: await freePort(),
      dir,
      fresh: true,
      quiet: true,
    });
    kafkaBroker = { bootstrap, dir, pid };
    log(`kafka broker on ${bootstrap}`);
    return kafkaBroker;
  } catch (error) {
    log(`no Kafka broker (${String(error).split('\n')[0]}): the relay rows are skipped`);
    return undefined;
  }
}

/** Stops the broker and removes its folder. */
export async function stopKafkaBroker(): Promise<void> {
  if (kafkaBroker) await stopBroker({ dir: kafkaBroker.dir, remove: true }).catch(() => {});
  kafkaBroker = undefined;
}

/** Synchronous, for the process's 'exit' handler. */
export function killKafkaBroker(): void {
  try {
    if (kafkaBroker) process.kill(kafkaBroker.pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}
