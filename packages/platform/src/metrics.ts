import { createHash, timingSafeEqual } from 'node:crypto';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import client from 'prom-client';
import { unauthorized } from './errors.ts';

/**
 * The process's one Prometheus registry: every tokenvault_* metric (docs/metrics.md) is registered
 * here, and GET /metrics serves it. Metrics are recorded where things happen (HTTP shell, event
 * store, workers); gauges of state kept elsewhere (checkpoints, queues) are read at scrape time.
 */
export const metricsRegistry = new client.Registry();

const registers = [metricsRegistry];
const secondsBuckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

let defaultMetrics = false;
/** Node process metrics (CPU, memory, event loop, GC) as tokenvault_process_* and tokenvault_nodejs_*. */
export function collectProcessMetrics(): void {
  if (defaultMetrics) return;
  defaultMetrics = true;
  client.collectDefaultMetrics({ register: metricsRegistry, prefix: 'tokenvault_' });
}

// --- HTTP ------------------------------------------------------------------------------------

const httpLabels = ['method', 'route', 'status'] as const;

export const httpRequestsTotal = new client.Counter({
  name: 'tokenvault_http_requests_total',
  help: 'HTTP requests answered, by method, route template and status.',
  labelNames: httpLabels,
  registers,
});

export const httpRequestDuration = new client.Histogram({
  name: 'tokenvault_http_request_duration_seconds',
  help: 'Time from the request reaching the app to its response being written, by method, route template and status.',
  labelNames: httpLabels,
  buckets: secondsBuckets,
  registers,
});

export const httpProcessRequestsTotal = new client.Counter({
  name: 'tokenvault_http_process_requests_total',
  help: 'HTTP requests received, by the HTTP process (1 … HTTP_PROCESSES) that took them: how evenly the processes share the load.',
  labelNames: ['process'] as const,
  registers,
});

/** The label of requests no route matched (404s of unknown paths): never the raw path. */
export const unmatchedRoute = '(unmatched)';

/**
 * The express route template that answered (`/tokens/:id`), never the path itself: ids are data,
 * and every distinct path would be a time series of its own.
 */
export function routeTemplateOf(req: Request): string {
  // express types req.route as any.
  const route = (req as { route?: { path?: unknown } }).route;
  if (!route || typeof route.path !== 'string') return unmatchedRoute;
  return `${req.baseUrl}${route.path}`;
}

/** Counts and times every request once its response is written (or the client went away). */
export function httpMetrics(): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    const stop = process.hrtime.bigint();
    let done = false;
    const record = () => {
      if (done) return;
      done = true;
      const labels = {
        method: req.method,
        route: routeTemplateOf(req),
        status: String(res.statusCode),
      };
      httpRequestsTotal.inc(labels);
      httpRequestDuration.observe(labels, Number(process.hrtime.bigint() - stop) / 1e9);
    };
    res.once('finish', record);
    res.once('close', record);
    next();
  };
}

// --- Event store ---------------------------------------------------------------------------------

export const eventStoreAppendsTotal = new client.Counter({
  name: 'tokenvault_eventstore_appends_total',
  help: 'Appends to the event store, by stream category and outcome (ok, wrong_expected_revision, error).',
  labelNames: ['category', 'outcome'] as const,
  registers,
});

export const eventStoreGroupCommitBatchesTotal = new client.Counter({
  name: 'tokenvault_eventstore_group_commit_batches_total',
  help: 'Group-commit transactions of several appends, by how they were sent (multi_row, or per_append after a multi-row batch was rolled back).',
  labelNames: ['statements'] as const,
  registers,
});

export const eventStoreEventsAppendedTotal = new client.Counter({
  name: 'tokenvault_eventstore_events_appended_total',
  help: 'Events written by successful appends, by stream category.',
  labelNames: ['category'] as const,
  registers,
});

export const eventStoreAppendDuration = new client.Histogram({
  name: 'tokenvault_eventstore_append_duration_seconds',
  help: 'Time of one append (one statement, retries of expected revision "any" included), by outcome.',
  labelNames: ['outcome'] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
  registers,
});

export const eventStoreLogReadsTotal = new client.Counter({
  name: 'tokenvault_eventstore_log_reads_total',
  help: 'Reads of the event log by subscriptions: shared (one read for every subscriber of the process caught up with it) or own (a subscriber behind the shared read, catching up).',
  labelNames: ['reader'] as const,
  registers,
});

export const eventStoreEventsReadTotal = new client.Counter({
  name: 'tokenvault_eventstore_events_read_total',
  help: 'Events those reads returned, by reader (shared, own).',
  labelNames: ['reader'] as const,
  registers,
});

/** A stream's category, the part of its name before the first `-` (`tokens.token`, `tenancy.invitation`). */
export const streamCategoryOf = (stream: string) => stream.split('-', 1)[0] ?? stream;

// --- Event processors ----------------------------------------------------------------------------

export const processorBatchesTotal = new client.Counter({
  name: 'tokenvault_processor_batches_total',
  help: 'Batches an event processor of this process handled and committed with its checkpoint, by processor.',
  labelNames: ['processor'] as const,
  registers,
});

export const processorActive = new client.Gauge({
  name: 'tokenvault_processor_active',
  help: "Whether this process holds the processor's lease and runs it (1) or stands by (0), by processor.",
  labelNames: ['processor'] as const,
  registers,
});

// --- Queues and jobs -----------------------------------------------------------------------------

export const queueJobsTotal = new client.Counter({
  name: 'tokenvault_queue_jobs_total',
  help: 'Job attempts finished by this process’s BullMQ workers, by queue and outcome (completed, retried: failed with attempts left, failed: failed for good).',
  labelNames: ['queue', 'outcome'] as const,
  registers,
});

/** The outcome label of a failed attempt: `retried` while the job has attempts left. */
export function failedJobOutcome(job: { attemptsMade: number; opts: { attempts?: number } } | undefined) {
  return job && job.attemptsMade < (job.opts.attempts ?? 1) ? 'retried' : 'failed';
}

// --- Reactors ------------------------------------------------------------------------------------

export const reactorRunsTotal = new client.Counter({
  name: 'tokenvault_reactor_runs_total',
  help: 'Reactor runs carried out by this process’s worker pool, by outcome: ok, or the error’s name.',
  labelNames: ['outcome'] as const,
  registers,
});

export const reactorRunDuration = new client.Histogram({
  name: 'tokenvault_reactor_run_duration_seconds',
  help: 'Time of one reactor run in the worker (opening the request, the sandbox, tokenize, sealing), by result (ok, error).',
  labelNames: ['result'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  registers,
});

// --- Scrapes -------------------------------------------------------------------------------------

/**
 * The GET /metrics handler: the registry in Prometheus text format. With a token, only requests
 * carrying `Authorization: Bearer <token>` are answered (others 401); without one the endpoint is
 * open, and must then not be reachable from outside (docs/metrics.md).
 */
export function metricsHandler(options: {
  token?: string | undefined;
  /** The text to serve: by default this process's registry (several HTTP processes: all of theirs). */
  gather?: () => Promise<string>;
}): RequestHandler {
  const gather = options.gather ?? (() => metricsRegistry.metrics());
  const expected = options.token ? digest(options.token) : undefined;
  return async (req: Request, res: Response) => {
    if (expected) {
      const given = /^Bearer (.+)$/i.exec(req.get('authorization') ?? '')?.[1];
      if (!given || !timingSafeEqual(digest(given), expected)) {
        throw unauthorized('GET /metrics needs Authorization: Bearer <METRICS_TOKEN>.', {
          headers: { 'www-authenticate': 'Bearer realm="metrics"' },
        });
      }
    }
    const body = await gather();
    res.status(200).type(metricsRegistry.contentType).send(body);
  };
}

const digest = (value: string) => createHash('sha256').update(value).digest();
