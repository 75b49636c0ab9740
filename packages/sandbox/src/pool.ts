import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ChildMessage, ParentMessage } from './protocol.ts';
import {
  ServiceCallError,
  type SandboxError,
  type SandboxLogger,
  type SandboxOutcome,
  type SandboxPool,
  type SandboxPoolOptions,
  type SandboxRun,
  type ServiceCallHandler,
} from './types.ts';

const CHILD_ENTRY = fileURLToPath(new URL('./child.ts', import.meta.url));
const READY_TIMEOUT_MS = 15_000;
// The child enforces the wall time itself; this is the parent's backstop for a child that stops
// answering: past wall time + grace, the child is killed.
const BACKSTOP_GRACE_MS = 5_000;
const RESPAWN_DELAY_MS = 1_000;

const runtimeError = (message: string): SandboxError => ({
  name: 'ReactorRuntimeError',
  status: 500,
  message,
});
const CRASH_ERROR = runtimeError('Reactor sandbox process exited unexpectedly');
const CLOSED_ERROR = runtimeError('Reactor sandbox is closed');

const silentLogger: SandboxLogger = { warn: () => undefined, error: () => undefined };

interface PendingRun {
  runId: number;
  run: SandboxRun;
  onServiceCall: ServiceCallHandler;
  resolve(outcome: SandboxOutcome): void;
  queuedAt: number;
}

interface InFlight extends PendingRun {
  backstop: NodeJS.Timeout;
  serviceQueue: Extract<ChildMessage, { type: 'svc' }>[];
  serviceActive: number;
  done: boolean;
}

interface Child {
  process: ChildProcess;
  ready: boolean;
  inFlight: Map<number, InFlight>;
  startedAt: number;
}

function validateLimits(options: SandboxPoolOptions): void {
  const { limits } = options;
  for (const [key, value] of Object.entries(limits)) {
    if (!Number.isInteger(value) || value <= 0)
      throw new TypeError(`Sandbox limit ${key} must be a positive integer`);
  }
  if (limits.memoryMb < 8) throw new TypeError('Sandbox limit memoryMb must be at least 8');
}

export async function createSandboxPool(options: SandboxPoolOptions): Promise<SandboxPool> {
  validateLimits(options);
  const { limits } = options;
  const processes = options.processes ?? 1;
  const concurrency = options.concurrencyPerProcess ?? 2;
  const serviceConcurrency = options.serviceCallConcurrency ?? 4;
  const logger = options.logger ?? silentLogger;
  const childConfig = JSON.stringify({
    limits,
    slots: concurrency,
    maxRunsPerIsolate: options.maxRunsPerIsolate ?? 500,
  });

  const children = new Set<Child>();
  const queue: PendingRun[] = [];
  let nextRunId = 0;
  let closed = false;

  function send(child: Child, message: ParentMessage): void {
    if (child.process.connected) child.process.send(message);
  }

  function complete(child: Child, flight: InFlight, outcome: SandboxOutcome): void {
    if (flight.done) return;
    flight.done = true;
    clearTimeout(flight.backstop);
    child.inFlight.delete(flight.runId);
    flight.resolve(outcome);
    dispatch();
  }

  function pumpService(child: Child, flight: InFlight): void {
    while (!flight.done && flight.serviceActive < serviceConcurrency && flight.serviceQueue.length > 0) {
      const call = flight.serviceQueue.shift()!;
      flight.serviceActive += 1;
      void (async () => {
        let reply: Extract<ParentMessage, { type: 'svcResult' }>;
        try {
          if (flight.run.serviceMethods === null || !flight.run.serviceMethods.includes(call.method)) {
            throw new ServiceCallError(`Unknown service method ${call.method}`, 400);
          }
          const args = JSON.parse(call.argsJson) as unknown;
          const value = await flight.onServiceCall(call.method, Array.isArray(args) ? args : []);
          const payload = value === undefined ? undefined : JSON.stringify(value);
          reply = { type: 'svcResult', runId: flight.runId, callId: call.callId, ok: true, payload };
        } catch (error) {
          const info =
            error instanceof ServiceCallError
              ? { message: error.message, status: error.status, data: error.data }
              : { message: 'Service call failed', status: 500 };
          if (!(error instanceof ServiceCallError)) {
            logger.error({ err: error, method: call.method }, 'reactor service call failed');
          }
          reply = {
            type: 'svcResult',
            runId: flight.runId,
            callId: call.callId,
            ok: false,
            payload: JSON.stringify(info),
          };
        }
        flight.serviceActive -= 1;
        if (!flight.done) {
          send(child, reply);
          pumpService(child, flight);
        }
      })();
    }
  }

  function onMessage(child: Child, message: ChildMessage): void {
    if (message.type === 'ready') {
      child.ready = true;
      dispatch();
    } else if (message.type === 'svc') {
      const flight = child.inFlight.get(message.runId);
      if (flight === undefined || flight.done) return;
      flight.serviceQueue.push(message);
      pumpService(child, flight);
    } else if (message.type === 'done') {
      const flight = child.inFlight.get(message.runId);
      if (flight !== undefined) complete(child, flight, message.outcome);
    } else if (message.type === 'log') {
      logger[message.level](message.details, message.message);
    }
  }

  function spawn(): Child {
    const proc = fork(CHILD_ENTRY, [childConfig], {
      execPath: process.execPath,
      // No inherited flags (loaders, inspector), and isolated-vm wants no Node snapshot.
      execArgv: ['--no-node-snapshot'],
      // The child needs nothing from the environment: keep the service's secrets out of it.
      env: {},
      serialization: 'json',
      // Never the service's own output: what Node writes there (an uncaught error's message and
      // stack) can quote a reactor's data. Only its size is logged.
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    const child: Child = { process: proc, ready: false, inFlight: new Map(), startedAt: Date.now() };
    children.add(child);
    for (const stream of ['stdout', 'stderr'] as const) {
      proc[stream]?.on('data', (chunk: Buffer) =>
        logger.warn(
          { pid: proc.pid, stream, bytes: chunk.length },
          'reactor sandbox process wrote output (not logged: it can quote tenant data)',
        ),
      );
    }
    proc.on('message', (message: ChildMessage) => onMessage(child, message));
    proc.on('error', (error) => logger.error({ err: error }, 'reactor sandbox process error'));
    proc.on('exit', (code, signal) => {
      children.delete(child);
      for (const flight of [...child.inFlight.values()]) {
        complete(child, flight, {
          ok: false,
          error: CRASH_ERROR,
          cpuTimeMs: 0,
          wallTimeMs: Date.now() - flight.queuedAt,
        });
      }
      if (closed) return;
      logger.warn({ code, signal, pid: proc.pid }, 'reactor sandbox process exited; starting another');
      const livedMs = Date.now() - child.startedAt;
      setTimeout(
        () => {
          if (!closed) spawn();
        },
        livedMs < RESPAWN_DELAY_MS ? RESPAWN_DELAY_MS : 0,
      );
    });
    return child;
  }

  function dispatch(): void {
    while (queue.length > 0) {
      let target: Child | undefined;
      for (const child of children) {
        if (!child.ready || !child.process.connected || child.inFlight.size >= concurrency) continue;
        if (target === undefined || child.inFlight.size < target.inFlight.size) target = child;
      }
      if (target === undefined) return;
      const pending = queue.shift()!;
      start(target, pending);
    }
  }

  function start(child: Child, pending: PendingRun): void {
    const flight: InFlight = {
      ...pending,
      backstop: setTimeout(() => {
        logger.error(
          { pid: child.process.pid, runId: pending.runId },
          'reactor sandbox process unresponsive; killing it',
        );
        child.process.kill('SIGKILL');
      }, limits.wallTimeMs + BACKSTOP_GRACE_MS),
      serviceQueue: [],
      serviceActive: 0,
      done: false,
    };
    child.inFlight.set(flight.runId, flight);
    const { run } = pending;
    send(child, {
      type: 'run',
      runId: flight.runId,
      code: run.code,
      argsJson: run.args === undefined ? undefined : JSON.stringify(run.args),
      configurationJson: run.configuration === undefined ? undefined : JSON.stringify(run.configuration),
      serviceMethods: run.serviceMethods === null ? null : [...run.serviceMethods],
    });
  }

  for (let i = 0; i < processes; i += 1) spawn();
  await waitUntilReady([...children]);

  return {
    run(run, onServiceCall) {
      if (closed) return Promise.resolve({ ok: false, error: CLOSED_ERROR, cpuTimeMs: 0, wallTimeMs: 0 });
      return new Promise<SandboxOutcome>((resolve) => {
        queue.push({ runId: ++nextRunId, run, onServiceCall, resolve, queuedAt: Date.now() });
        dispatch();
      });
    },
    async close() {
      if (closed) return;
      closed = true;
      for (const pending of queue.splice(0)) {
        pending.resolve({ ok: false, error: CLOSED_ERROR, cpuTimeMs: 0, wallTimeMs: 0 });
      }
      await Promise.all(
        [...children].map(
          (child) =>
            new Promise<void>((resolve) => {
              if (child.process.exitCode !== null || child.process.signalCode !== null) return resolve();
              const kill = setTimeout(() => child.process.kill('SIGKILL'), 2_000);
              child.process.once('exit', () => {
                clearTimeout(kill);
                resolve();
              });
              child.process.disconnect();
            }),
        ),
      );
    },
  };

  async function waitUntilReady(started: Child[]): Promise<void> {
    await Promise.all(
      started.map(
        (child) =>
          new Promise<void>((resolve, reject) => {
            const timer = setTimeout(() => {
              child.process.kill('SIGKILL');
              reject(new Error('Reactor sandbox process did not start in time'));
            }, READY_TIMEOUT_MS);
            const onReady = (message: ChildMessage) => {
              if (message.type !== 'ready') return;
              clearTimeout(timer);
              child.process.off('exit', onExit);
              child.process.off('message', onReady);
              resolve();
            };
            const onExit = () => {
              clearTimeout(timer);
              reject(new Error('Reactor sandbox process exited while starting'));
            };
            child.process.on('message', onReady);
            child.process.once('exit', onExit);
          }),
      ),
    ).catch(async (error: unknown) => {
      closed = true;
      for (const child of children) child.process.kill('SIGKILL');
      throw error;
    });
  }
}
