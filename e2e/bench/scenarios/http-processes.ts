// What a second HTTP process gives on this machine's cores (HTTP_PROCESSES, docs/deployment.md):
// GET /tokens/{id} with the service restarted with one HTTP process, then with two, adjacent runs
// on the same database and ids (the baseline keeps its one process).
import { log } from '../support/log.ts';
import { stopChild, waitForHttp } from '../support/processes.ts';
import type { Row } from '../support/report.ts';
import { startService, type Stack } from '../support/stack.ts';
import { measureGetToken } from './http-vs-baseline.ts';

/** The two rows; the stack's service is left running as it was configured (restarted). */
export async function measureGetTokenOneVsTwoHttpProcesses(
  stack: Stack,
  ids: readonly string[],
): Promise<Row[]> {
  const restartWith = async (env: Readonly<Record<string, string>>, name: string) => {
    await stopChild(stack.service);
    log(`restarting the service with ${name}`);
    const { service, serviceUrl } = await startService(`service-${name}`, env);
    await waitForHttp(`${serviceUrl}/readyz`, service);
    stack.service = service;
    stack.serviceUrl = serviceUrl;
  };
  const rows: Row[] = [];
  for (const processes of [1, 2]) {
    await restartWith(
      { ...stack.serviceEnv, HTTP_PROCESSES: String(processes) },
      `HTTP_PROCESSES=${processes}`,
    );
    const { row } = await measureGetToken(stack, ids);
    rows.push({ ...row, scenario: `GET /tokens/{id}, HTTP_PROCESSES=${processes}` });
  }
  await restartWith(stack.serviceEnv, 'its own settings');
  return rows;
}
