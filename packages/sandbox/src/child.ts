// Sandbox child process: forked by the pool, runs reactor code in isolated-vm isolates, one
// isolate per slot, a fresh context per run. Plain Node 24 (type stripping): no enums, no
// parameter properties. Exits when its parent goes away.
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import ivm from 'isolated-vm';
import type { ChildConfig, ChildMessage, ChildOutcome, ParentMessage } from './protocol.ts';
import { REACTOR_ERRORS, type SandboxError } from './types.ts';

type RunMessage = Extract<ParentMessage, { type: 'run' }>;

const config = JSON.parse(process.argv[2] ?? '{}') as ChildConfig;
const { limits } = config;
const PRELUDE = readFileSync(new URL('./guest/prelude.js', import.meta.url), 'utf8');
const CPU_LIMIT_NS = BigInt(limits.cpuTimeMs) * 1_000_000n;
const CPU_POLL_MS = Math.max(5, Math.min(50, Math.floor(limits.cpuTimeMs / 10)));
// After a run, the isolate must answer within this time, else it is still busy with work the
// reactor left behind (say an endless microtask chain) and it is disposed.
const IDLE_GRACE_MS = 250;
const RECYCLE_HEAP_BYTES = limits.memoryMb * 1024 * 1024 * 0.5;

const runtimeError = (message: string): SandboxError => ({
  name: 'ReactorRuntimeError',
  status: 500,
  message,
});
const WALL_ERROR = runtimeError(`Reactor exceeded its wall time of ${limits.wallTimeMs} ms`);
const CPU_ERROR = runtimeError(`Reactor exceeded its CPU time of ${limits.cpuTimeMs} ms`);
const MEMORY_ERROR = runtimeError(`Reactor exceeded its memory limit of ${limits.memoryMb} MB`);
const FLOOD_ERROR = runtimeError(`Reactor exceeded its limit of ${limits.maxServiceCalls} service calls`);
const INTERNAL_ERROR = runtimeError('Reactor sandbox failed');

function send(message: ChildMessage): void {
  if (process.connected) process.send?.(message);
}

function log(level: 'warn' | 'error', message: string, details: Record<string, unknown> = {}): void {
  send({ type: 'log', level, message, details });
}

/** What the log may say of an error near a run: the host's class of it, never its message. */
const errorClass = (error: unknown): string =>
  error instanceof Error ? error.constructor.name : typeof error;

interface Slot {
  isolate: ivm.Isolate | null;
  prelude: ivm.Script | null;
  /** Reactor code compiled in this isolate (a Script runs in any of its contexts), by source. */
  scripts: Map<string, ivm.Script>;
  runs: number;
  busy: boolean;
}

interface ActiveRun {
  control: ivm.Reference | null;
  serviceCalls: number;
  finished: boolean;
  limitHit(error: SandboxError): void;
}

const slots: Slot[] = Array.from({ length: config.slots }, () => ({
  isolate: null,
  prelude: null,
  scripts: new Map(),
  runs: 0,
  busy: false,
}));
const active = new Map<number, ActiveRun>();
const queue: RunMessage[] = [];

async function warm(slot: Slot): Promise<ivm.Isolate> {
  const isolate = new ivm.Isolate({
    memoryLimit: limits.memoryMb,
    onCatastrophicError: (message) => {
      // V8 lost control of the isolate: nothing in this process can be trusted any more. The
      // pool sees the exit, fails the runs in flight and starts a new child.
      process.stderr.write(`[sandbox] catastrophic isolate error: ${String(message)}\n`);
      process.abort();
    },
  });
  slot.isolate = isolate;
  slot.prelude = await isolate.compileScript(PRELUDE, { filename: 'tokenvault:prelude.js' });
  slot.runs = 0;
  return isolate;
}

function dispose(slot: Slot, isolate: ivm.Isolate): void {
  if (slot.isolate === isolate) {
    slot.isolate = null;
    slot.prelude = null;
    slot.scripts = new Map();
  }
  try {
    if (!isolate.isDisposed) isolate.dispose();
  } catch {
    // already gone
  }
}

const isTimeout = (error: unknown) => error instanceof Error && /timed out/i.test(error.message);
const isMemory = (error: unknown) => error instanceof Error && /memory limit/i.test(error.message);

function checkOutcome(json: unknown): SandboxError | { result: unknown } {
  if (typeof json !== 'string') return INTERNAL_ERROR;
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    return INTERNAL_ERROR;
  }
  if (parsed === null || typeof parsed !== 'object') return INTERNAL_ERROR;
  const outcome = parsed as { ok?: unknown; result?: unknown; error?: unknown };
  if (outcome.ok === true) return { result: outcome.result };
  const error = outcome.error as Partial<SandboxError> | null | undefined;
  if (
    outcome.ok !== false ||
    error === null ||
    typeof error !== 'object' ||
    typeof error.name !== 'string' ||
    !Object.hasOwn(REACTOR_ERRORS, error.name) ||
    REACTOR_ERRORS[error.name] !== error.status ||
    typeof error.message !== 'string'
  ) {
    return INTERNAL_ERROR;
  }
  const checked: SandboxError = { name: error.name, status: error.status, message: error.message };
  if (error.errors !== undefined) {
    const errors = error.errors as unknown;
    if (errors === null || typeof errors !== 'object') return INTERNAL_ERROR;
    for (const value of Object.values(errors)) {
      if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) return INTERNAL_ERROR;
    }
    checked.errors = errors as Record<string, string[]>;
  }
  return checked;
}

const SCRIPT_CACHE_SIZE = 32;
const CODE_CACHE_SIZE = 64;

/**
 * V8's code cache of each code this process compiled, by code: an isolate that has not compiled
 * the code yet (another slot, or a replaced isolate) starts from it instead of from the source.
 * Produced here only, never taken from outside (a forged code cache can corrupt V8).
 */
const codeCaches = new Map<string, ivm.ExternalCopy<ArrayBuffer>>();

/** Least recently used first: `get` moves an entry to the end, the oldest goes past `size`. */
function touch<V>(cache: Map<string, V>, key: string, value: V, size: number): V | undefined {
  cache.delete(key);
  cache.set(key, value);
  if (cache.size <= size) return undefined;
  const [oldest, old] = cache.entries().next().value as [string, V];
  cache.delete(oldest);
  return old;
}

/**
 * The code's script in this isolate: compiled once per isolate and code (a formula version), then
 * reused. A Script holds compiled code only; each run evaluates it in a context of its own, so
 * nothing the code sets at top level (or anywhere) outlives its run.
 */
async function compile(
  slot: Slot,
  isolate: ivm.Isolate,
  code: string,
): Promise<{ script: ivm.Script; cached: boolean }> {
  const cached = slot.scripts.get(code);
  if (cached !== undefined) {
    touch(slot.scripts, code, cached, SCRIPT_CACHE_SIZE);
    return { script: cached, cached: true };
  }
  const codeCache = codeCaches.get(code);
  // compileScript's declared type leaves out what the cache options add to the script.
  const script = (await isolate.compileScript(
    code,
    codeCache === undefined
      ? { filename: 'reactor.js', produceCachedData: true }
      : { filename: 'reactor.js', cachedData: codeCache },
  )) as ivm.Script & ivm.CachedDataResult & { cachedDataRejected?: boolean };
  if (script.cachedData !== undefined) touch(codeCaches, code, script.cachedData, CODE_CACHE_SIZE)?.release();
  else if (codeCache !== undefined && !script.cachedDataRejected)
    touch(codeCaches, code, codeCache, CODE_CACHE_SIZE);
  else if (codeCache !== undefined) codeCaches.delete(code);
  if (slot.isolate === isolate) touch(slot.scripts, code, script, SCRIPT_CACHE_SIZE)?.release();
  return { script, cached: false };
}

/** What `work` answers, or null past `ms` (the timer goes with the answer: none pile up per run). */
async function within<T>(work: Promise<T>, ms: number): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work,
      new Promise<null>((resolve) => (timer = setTimeout(resolve, ms, null))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

async function execute(slot: Slot, message: RunMessage): Promise<void> {
  const started = performance.now();
  const isolate = slot.isolate !== null && !slot.isolate.isDisposed ? slot.isolate : await warm(slot);
  slot.runs += 1;
  const prelude = slot.prelude as ivm.Script;
  const cpuStart = isolate.cpuTime;
  let cpuUsed = 0n;
  const readCpu = () => {
    try {
      if (!isolate.isDisposed) cpuUsed = isolate.cpuTime - cpuStart;
    } catch {
      // disposed meanwhile: keep the last reading
    }
    return cpuUsed;
  };

  let resolveOutcome!: (outcome: ChildOutcome) => void;
  const outcome = new Promise<ChildOutcome>((resolve) => (resolveOutcome = resolve));
  let killedBy: SandboxError | null = null;
  let codeCached: boolean | undefined;
  const run: ActiveRun = {
    control: null,
    serviceCalls: 0,
    finished: false,
    limitHit(error) {
      if (run.finished) return;
      killedBy = error;
      dispose(slot, isolate);
      fail(error);
    },
  };
  const finish = (result: { ok: true; result: unknown } | { ok: false; error: SandboxError }) => {
    if (run.finished) return;
    run.finished = true;
    const cpuTimeMs = Number(readCpu()) / 1e6;
    const wallTimeMs = performance.now() - started;
    const measures = { cpuTimeMs, wallTimeMs, ...(codeCached === undefined ? {} : { codeCached }) };
    resolveOutcome({ ...result, ...measures });
  };
  const fail = (error: SandboxError) => finish({ ok: false, error });
  active.set(message.runId, run);

  const wallTimer = setTimeout(() => run.limitHit(WALL_ERROR), limits.wallTimeMs);
  const cpuTimer = setInterval(() => {
    if (isolate.isDisposed) run.limitHit(MEMORY_ERROR);
    else if (readCpu() > CPU_LIMIT_NS) run.limitHit(CPU_ERROR);
  }, CPU_POLL_MS);

  const handles: { release(): void }[] = [];
  let stage: 'setup' | 'compile' | 'evaluate' | 'run' = 'setup';
  const guest = (async () => {
    const context = await isolate.createContext();
    handles.push(context);
    const jail = context.global;
    const host = new ivm.Callback(
      (kind: unknown, callId: unknown, method: unknown, argsJson: unknown) => {
        if (run.finished) return;
        if (kind === 'done') {
          // (kind, 0, outcomeJson): the prelude's report, at most maxOutputBytes.
          const checked = checkOutcome(method);
          if ('result' in checked) finish({ ok: true, result: checked.result });
          else fail(checked);
          return;
        }
        if (kind !== 'svc') return;
        if (typeof callId !== 'number' || typeof method !== 'string' || typeof argsJson !== 'string') return;
        if (message.serviceMethods === null || !message.serviceMethods.includes(method)) return;
        run.serviceCalls += 1;
        if (run.serviceCalls > limits.maxServiceCalls) {
          run.limitHit(FLOOD_ERROR);
          return;
        }
        send({ type: 'svc', runId: message.runId, callId, method, argsJson });
      },
      { ignored: true },
    );
    await jail.set('__tv_host', host);
    // The prelude's completion value (its control function) as a Reference: never on the global.
    const control = await prelude.run(context, {
      timeout: limits.cpuTimeMs,
      reference: true,
    });
    handles.push(control);
    run.control = control;

    stage = 'compile';
    const { script, cached } = await compile(slot, isolate, message.code);
    codeCached = cached;
    stage = 'evaluate';
    // Its completion value (often the exported function) comes back as a Reference, released
    // below: an unreleased one keeps the whole context alive in the isolate until this process
    // happens to collect the handle (the isolate's heap then grows by every run's context, and
    // its mark-compacts stall runs for 10-30 ms).
    handles.push(await script.run(context, { timeout: limits.cpuTimeMs, reference: true }));
    stage = 'run';
    const remaining = Math.max(1, limits.cpuTimeMs - Math.floor(Number(readCpu()) / 1e6));
    // Returns once the reactor's synchronous part is done; the outcome comes through `host`
    // ('done'), and the timers cover whatever it awaits.
    await control.apply(
      undefined,
      ['start', message.argsJson, message.configurationJson, message.serviceMethods, limits.maxOutputBytes],
      { arguments: { copy: true }, timeout: remaining },
    );
  })().catch((error: unknown) => {
    if (run.finished) return;
    if (killedBy !== null) fail(killedBy);
    else if (isolate.isDisposed || isMemory(error)) run.limitHit(MEMORY_ERROR);
    else if (isTimeout(error)) run.limitHit(CPU_ERROR);
    else if (stage === 'compile') {
      fail(
        runtimeError(
          `Reactor code does not compile: ${error instanceof Error ? error.message : 'syntax error'}`,
        ),
      );
    } else if (stage === 'evaluate') {
      fail(
        runtimeError(
          error instanceof Error && error.message !== '' ? error.message : 'Reactor Runtime Error',
        ),
      );
    } else {
      // Its class only: an error out of a run can carry the code's text (and so its data).
      log('error', 'sandbox run failed', { stage, error: errorClass(error) });
      fail(INTERNAL_ERROR);
    }
  });

  const result = await outcome;
  clearTimeout(wallTimer);
  clearInterval(cpuTimer);
  active.delete(message.runId);
  send({ type: 'done', runId: message.runId, outcome: result });

  // Clean-up, off the caller's path: the guest chain has ended or its isolate is gone.
  await within(guest, IDLE_GRACE_MS);
  for (const handle of handles.reverse()) {
    try {
      handle.release();
    } catch {
      // released with its isolate
    }
  }
  if (!isolate.isDisposed) {
    const stats = await within(isolate.getHeapStatistics(), IDLE_GRACE_MS).catch(() => null);
    if (
      stats === null ||
      stats.used_heap_size > RECYCLE_HEAP_BYTES ||
      slot.runs >= config.maxRunsPerIsolate
    ) {
      dispose(slot, isolate);
    }
  }
  if (slot.isolate === null) {
    await warm(slot).catch((error: unknown) => {
      log('error', 'sandbox isolate creation failed', { error: String(error) });
    });
  }
}

function pump(): void {
  for (const slot of slots) {
    if (slot.busy) continue;
    const next = queue.shift();
    if (next === undefined) return;
    slot.busy = true;
    void execute(slot, next)
      .catch((error: unknown) => {
        log('error', 'sandbox slot failed', { error: errorClass(error) });
        send({
          type: 'done',
          runId: next.runId,
          outcome: { ok: false, error: INTERNAL_ERROR, cpuTimeMs: 0, wallTimeMs: 0 },
        });
      })
      .finally(() => {
        slot.busy = false;
        pump();
      });
  }
}

process.on('message', (message: ParentMessage) => {
  if (message.type === 'run') {
    queue.push(message);
    pump();
  } else if (message.type === 'svcResult') {
    const run = active.get(message.runId);
    if (run === undefined || run.finished || run.control === null) return;
    run.control
      .apply(undefined, ['settle', message.callId, message.ok, message.payload], {
        arguments: { copy: true },
        timeout: limits.cpuTimeMs,
      })
      .catch((error: unknown) => {
        if (isTimeout(error)) run.limitHit(CPU_ERROR);
      });
  }
});
process.on('disconnect', () => process.exit(0));

await Promise.all(slots.map((slot) => warm(slot)));
send({ type: 'ready' });
