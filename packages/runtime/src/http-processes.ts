import cluster, { type Worker } from 'node:cluster';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { AggregatorRegistry, type MetricObjectWithValues, type MetricValue } from 'prom-client';
import { metricsRegistry, type Logger } from '@tokenvault/platform';

/*
 * HTTP_PROCESSES > 1: the primary process forks that many HTTP processes (node:cluster, which
 * hands each connection to one of them in turn) and keeps what must run once. What they share
 * lives in PostgreSQL and Redis (rate limits, caps, idempotency, tenant concurrency) or reaches
 * every process by NOTIFY (cache invalidations), so none of it passes through here: the channel
 * between the processes carries only their state (up or not), a stop, and /metrics' figures.
 */

/** The environment variable a forked HTTP process finds its number in (1 … HTTP_PROCESSES). */
const processNumberVariable = 'TOKENVAULT_HTTP_PROCESS';

type MetricsJson = MetricObjectWithValues<MetricValue<string>>[];

type PrimaryMessage =
  | { type: 'tokenvault:http-processes'; up: number; expected: number }
  | { type: 'tokenvault:stop' }
  | { type: 'tokenvault:metrics-of-process'; requestId: string }
  | { type: 'tokenvault:metrics'; requestId: string; text?: string };

type HttpProcessMessage =
  | { type: 'tokenvault:metrics-request'; requestId: string }
  | { type: 'tokenvault:metrics-of-process'; requestId: string; metrics: MetricsJson };

const isMessage = <T extends { type: string }>(message: unknown): message is T =>
  typeof message === 'object' &&
  message !== null &&
  typeof (message as { type?: unknown }).type === 'string' &&
  (message as { type: string }).type.startsWith('tokenvault:');

/** Whether this process is one of the HTTP processes a primary forked (it serves HTTP only). */
export const isHttpProcess = (): boolean => cluster.isWorker;

/** This HTTP process's number, 1 … HTTP_PROCESSES ("1" when there is one process): a metric label. */
export const httpProcessNumber = (): string => process.env[processNumberVariable] ?? '1';

/** How long the primary waits for each process's figures before serving /metrics without them. */
const metricsTimeoutMs = 3_000;
/** How long SIGTERM waits for the HTTP processes to finish their requests before it kills them. */
const drainTimeoutMs = 12_000;
/** A process that ran this long before dying is restarted at once; quicker deaths back off. */
const healthyRunMs = 30_000;
const firstRestartDelayMs = 250;
const maxRestartDelayMs = 30_000;

export interface HttpProcesses {
  /** The port they share (PORT, or the one the system chose for PORT=0). */
  port: number;
  /** Asks each to finish its requests and stop, waits for them (killing stragglers), then returns. */
  close(): Promise<void>;
}

interface Slot {
  number: number;
  worker?: Worker;
  up: boolean;
  startedAt: number;
  quickDeaths: number;
  restart?: NodeJS.Timeout;
}

/**
 * In the primary: forks `count` HTTP processes (each runs the service's entry point again, which
 * sees `isHttpProcess()`), resolves once all of them listen, restarts one that dies (at once after
 * a long run, with a doubling delay after quick deaths) and logs it; gathers /metrics for them.
 * A process that dies before all have listened fails the start (a start-up fault, not a crash).
 */
export async function startHttpProcesses(count: number, logger: Logger): Promise<HttpProcesses> {
  const slots: Slot[] = Array.from({ length: count }, (_, index) => ({
    number: index + 1,
    up: false,
    startedAt: 0,
    quickDeaths: 0,
  }));
  let stopping = false;
  let port = 0;
  const exits = new Map<Worker, Promise<void>>();
  const metricsReplies = new Map<string, (metrics: MetricsJson) => void>();

  /**
   * A send's callback: a process can exit between isConnected() and the write (a stop, a crash),
   * and without a callback its EPIPE is an 'error' event that ends the primary. Its exit handler
   * deals with the process; the message is moot.
   */
  const ignoreGone = (error: Error | null) => {
    if (error && (error as NodeJS.ErrnoException).code !== 'EPIPE' && !stopping)
      logger.warn({ err: error }, 'message to an HTTP process not sent');
  };

  const broadcastState = () => {
    const state: PrimaryMessage = {
      type: 'tokenvault:http-processes',
      up: slots.filter((slot) => slot.up).length,
      expected: count,
    };
    for (const slot of slots) if (slot.worker?.isConnected()) slot.worker.send(state, ignoreGone);
  };

  /** Every process's registry (those that answer in time) and this one's, summed as their metrics say. */
  const gatherMetrics = async (): Promise<string> => {
    const replies = slots
      .filter((slot) => slot.worker?.isConnected())
      .map(
        (slot) =>
          new Promise<MetricsJson | undefined>((resolve) => {
            const requestId = randomUUID();
            const timer = setTimeout(() => {
              metricsReplies.delete(requestId);
              resolve(undefined);
            }, metricsTimeoutMs);
            metricsReplies.set(requestId, (metrics) => {
              clearTimeout(timer);
              metricsReplies.delete(requestId);
              resolve(metrics);
            });
            const ask: PrimaryMessage = { type: 'tokenvault:metrics-of-process', requestId };
            slot.worker!.send(ask, ignoreGone);
          }),
      );
    const all = [await metricsRegistry.getMetricsAsJSON(), ...(await Promise.all(replies))].filter(
      (metrics) => metrics !== undefined,
    );
    return AggregatorRegistry.aggregate(all).metrics();
  };

  let started: { resolve(): void; reject(error: Error): void };
  const allListening = new Promise<void>((resolve, reject) => (started = { resolve, reject }));
  let allUpOnce = false;

  const fork = (slot: Slot) => {
    slot.restart = undefined;
    slot.startedAt = Date.now();
    const worker = cluster.fork({ [processNumberVariable]: String(slot.number) });
    slot.worker = worker;
    exits.set(worker, new Promise((resolve) => worker.once('exit', () => resolve())));
    worker.on('listening', (address: AddressInfo) => {
      port = address.port;
      slot.up = true;
      broadcastState();
      if (!allUpOnce && slots.every((each) => each.up)) {
        allUpOnce = true;
        started.resolve();
      }
    });
    worker.on('message', (message: unknown) => {
      if (!isMessage<HttpProcessMessage>(message)) return;
      if (message.type === 'tokenvault:metrics-of-process') {
        metricsReplies.get(message.requestId)?.(message.metrics);
        return;
      }
      const { requestId } = message;
      gatherMetrics().then(
        (text) =>
          worker.isConnected() && worker.send({ type: 'tokenvault:metrics', requestId, text }, ignoreGone),
        (error: unknown) => {
          logger.warn({ err: error }, 'metrics of the HTTP processes not gathered');
          if (worker.isConnected()) worker.send({ type: 'tokenvault:metrics', requestId }, ignoreGone);
        },
      );
    });
    worker.once('exit', (code, signal) => {
      exits.delete(worker);
      slot.up = false;
      slot.worker = undefined;
      broadcastState();
      if (stopping) return;
      if (!allUpOnce) {
        started.reject(
          new Error(`HTTP process ${slot.number} exited (${signal ?? `code ${code}`}) before it listened`),
        );
        return;
      }
      const ranMs = Date.now() - slot.startedAt;
      slot.quickDeaths = ranMs >= healthyRunMs ? 0 : slot.quickDeaths + 1;
      const restartInMs =
        slot.quickDeaths === 0
          ? 0
          : Math.min(maxRestartDelayMs, firstRestartDelayMs * 2 ** (slot.quickDeaths - 1));
      logger.warn(
        { process: slot.number, exitedPid: worker.process.pid, code, signal, ranMs, restartInMs },
        'HTTP process exited; restarting it',
      );
      slot.restart = setTimeout(() => fork(slot), restartInMs);
    });
  };

  const close = async () => {
    stopping = true;
    for (const slot of slots) clearTimeout(slot.restart);
    const stop: PrimaryMessage = { type: 'tokenvault:stop' };
    const running = slots.flatMap((slot) => (slot.worker ? [slot.worker] : []));
    for (const worker of running) if (worker.isConnected()) worker.send(stop);
    const drained = Promise.all([...exits.values()]);
    const timer = setTimeout(() => {
      for (const worker of running) if (!worker.isDead()) worker.process.kill('SIGKILL');
    }, drainTimeoutMs);
    await drained;
    clearTimeout(timer);
  };

  for (const slot of slots) fork(slot);
  try {
    await allListening;
  } catch (error) {
    await close();
    throw error;
  }
  return { port, close };
}

/** What an HTTP process knows of the others: whether all are up, and their /metrics together. */
export interface HttpProcessLink {
  /** Undefined while every HTTP process is up; else a line saying how many are. */
  notUp(): string | undefined;
  /** The Prometheus text of every process, summed as each metric says (gauges of shared state: once). */
  metrics(): Promise<string>;
  /**
   * Runs `listener` when the primary asks this process to stop (SIGTERM of the service) or is
   * gone; at once if that happened already.
   */
  onStop(listener: (reason: string) => void): void;
}

let link: HttpProcessLink | undefined;

/** In an HTTP process: its one link to the primary (answers its questions, hears its state). */
export function httpProcessLink(): HttpProcessLink {
  link ??= joinPrimary();
  return link;
}

function joinPrimary(): HttpProcessLink {
  let state = { up: 0, expected: 1 };
  let stopReason: string | undefined;
  const stopListeners: ((reason: string) => void)[] = [];
  const stop = (reason: string) => {
    stopReason ??= reason;
    for (const listener of stopListeners.splice(0)) listener(reason);
  };
  const pending = new Map<string, (text: string | undefined) => void>();
  const send = (message: HttpProcessMessage) => {
    if (process.connected) process.send!(message);
  };
  process.on('message', (message: unknown) => {
    if (!isMessage<PrimaryMessage>(message)) return;
    switch (message.type) {
      case 'tokenvault:http-processes':
        state = { up: message.up, expected: message.expected };
        return;
      case 'tokenvault:stop':
        return stop('asked by the primary process');
      case 'tokenvault:metrics-of-process': {
        const { requestId } = message;
        void metricsRegistry
          .getMetricsAsJSON()
          .then((metrics) => send({ type: 'tokenvault:metrics-of-process', requestId, metrics }));
        return;
      }
      case 'tokenvault:metrics':
        pending.get(message.requestId)?.(message.text);
    }
  });
  process.on('disconnect', () => stop('the primary process is gone'));
  return {
    notUp: () =>
      state.up === state.expected ? undefined : `${state.up} of ${state.expected} HTTP processes are up`,
    metrics: () =>
      new Promise((resolve, reject) => {
        const requestId = randomUUID();
        const timer = setTimeout(() => {
          pending.delete(requestId);
          reject(new Error('the primary process did not gather /metrics in time'));
        }, 2 * metricsTimeoutMs);
        pending.set(requestId, (text) => {
          clearTimeout(timer);
          pending.delete(requestId);
          if (text === undefined) reject(new Error('the primary process could not gather /metrics'));
          else resolve(text);
        });
        send({ type: 'tokenvault:metrics-request', requestId });
      }),
    onStop(listener) {
      if (stopReason !== undefined) listener(stopReason);
      else stopListeners.push(listener);
    },
  };
}
