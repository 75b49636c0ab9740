// The service with several HTTP processes (HTTP_PROCESSES=2), as `npm start` runs it: a child
// process on a database of its own, and requests that each open a connection of their own (the
// primary hands connections to the HTTP processes in turn, so consecutive requests land on both).
import { request } from 'node:http';
import { prepareFreshService } from './fresh-service.ts';
import { parsePrometheusText } from './prometheus.ts';
import type { ServiceProcess } from './service-process.ts';

export interface Answer {
  status: number;
  body: unknown;
}

/** One request on a connection of its own (no keep-alive: the next may go to the other process). */
export function call(
  url: string,
  method: string,
  path: string,
  options: { key?: string; body?: unknown } = {},
): Promise<Answer> {
  const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
  return new Promise((resolve, reject) => {
    const outgoing = request(
      new URL(path, url),
      {
        method,
        agent: false,
        headers: {
          connection: 'close',
          ...(options.key ? { 'svc-api-key': options.key } : {}),
          ...(payload ? { 'content-type': 'application/json' } : {}),
        },
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => {
          const json = (response.headers['content-type'] ?? '').includes('json');
          resolve({ status: response.statusCode ?? 0, body: json && text ? JSON.parse(text) : text });
        });
      },
    );
    outgoing.on('error', reject);
    outgoing.end(payload);
  });
}

/** Statuses of `count` GETs, each on a connection of its own. */
export async function statusesOf(url: string, count: number, path: string, key?: string): Promise<number[]> {
  const seen: number[] = [];
  for (let i = 0; i < count; i++) seen.push((await call(url, 'GET', path, key ? { key } : {})).status);
  return seen;
}

/** Requests each HTTP process has taken so far, by its number (`/metrics`). */
export async function requestsTakenByProcess(url: string): Promise<Map<string, number>> {
  const scraped = await call(url, 'GET', '/metrics');
  if (scraped.status !== 200) throw new Error(`GET /metrics answered ${scraped.status}`);
  const taken = new Map<string, number>();
  for (const sample of parsePrometheusText(String(scraped.body)).samples) {
    if (sample.name === 'tokenvault_http_process_requests_total')
      taken.set(sample.labels.process!, sample.value);
  }
  return taken;
}

export interface ServiceWithHttpProcesses {
  service: ServiceProcess;
  url: string;
  /** The bootstrapped tenant's management key. */
  ownerKey: string;
  /** The pids of the HTTP processes that said they listen, in the order they did. */
  listeningPids(): number[];
  stop(): Promise<void>;
}

/** A fresh database and tenant, then `npm start` with HTTP_PROCESSES=2 and `overrides`. */
export async function startServiceWithHttpProcesses(
  overrides: Record<string, string> = {},
): Promise<ServiceWithHttpProcesses> {
  const fresh = await prepareFreshService({
    tenantName: 'Cores',
    env: { HTTP_PROCESSES: '2', ...overrides },
  });
  let service: ServiceProcess;
  try {
    // Three processes starting at once on a loaded 2-core machine take a while.
    service = await fresh.start({ startTimeoutMs: 300_000 });
  } catch (error) {
    await fresh.close();
    throw error;
  }
  return {
    service,
    url: service.url,
    ownerKey: fresh.apiKey,
    listeningPids: () =>
      service.output
        .filter((line) => line.includes('"HTTP process listening"'))
        .map((line) => (JSON.parse(line) as { pid: number }).pid),
    stop: () => fresh.close(),
  };
}
