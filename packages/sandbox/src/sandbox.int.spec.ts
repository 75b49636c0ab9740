import { execSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  checkSyntax,
  createSandboxPool,
  ServiceCallError,
  type SandboxLimits,
  type SandboxOutcome,
  type SandboxPool,
  type SandboxRun,
  type ServiceCallHandler,
} from './index.ts';

const LIMITS: SandboxLimits = {
  memoryMb: 64,
  cpuTimeMs: 500,
  wallTimeMs: 1_000,
  maxOutputBytes: 1024 * 1024,
  maxServiceCalls: 100,
};
const SDK = '@basis-theory/basis-theory-reactor-formulas-sdk-js';
const noService: ServiceCallHandler = async () => {
  throw new Error('no service calls expected');
};

let pool: SandboxPool;
const logs: { level: string; message: string; details: object }[] = [];

beforeAll(async () => {
  pool = await createSandboxPool({
    limits: LIMITS,
    processes: 1,
    concurrencyPerProcess: 2,
    logger: {
      warn: (details, message) => logs.push({ level: 'warn', message, details }),
      error: (details, message) => logs.push({ level: 'error', message, details }),
    },
  });
});

afterAll(async () => {
  await pool?.close();
});

function runCode(
  code: string,
  more: Partial<SandboxRun> = {},
  onServiceCall = noService,
): Promise<SandboxOutcome> {
  return pool.run({ code, args: {}, configuration: {}, serviceMethods: null, ...more }, onServiceCall);
}

function errorOf(outcome: SandboxOutcome) {
  if (outcome.ok) throw new Error(`expected an error, got ${JSON.stringify(outcome.result)}`);
  return outcome.error;
}

async function expectHealthy(): Promise<void> {
  const outcome = await runCode('module.exports = async (req) => ({ raw: req.args.n + 1 })', {
    args: { n: 41 },
  });
  expect(outcome).toMatchObject({ ok: true, result: { raw: 42 } });
}

describe('sandbox: happy path', () => {
  it('returns args and configuration', async () => {
    const outcome = await runCode(
      `module.exports = async function (req) {
         return { raw: { args: req.args, configuration: req.configuration, svc: req.svc } };
       };`,
      { args: { card: { number: '4242424242424242' } }, configuration: { key: 'v' } },
    );
    expect(outcome).toMatchObject({
      ok: true,
      result: {
        raw: { args: { card: { number: '4242424242424242' } }, configuration: { key: 'v' }, svc: null },
      },
    });
    expect(outcome.wallTimeMs).toBeGreaterThan(0);
  });

  it('awaits service calls answered by the host', async () => {
    const calls: [string, unknown[]][] = [];
    const outcome = await runCode(
      `module.exports = async function (req) {
         const token = await req.svc.tokens.create({ type: 'token', data: req.args.value });
         const again = await req.svc.tokens.get(token.id);
         const children = await Promise.all([1, 2, 3].map((n) => req.svc.tokens.createChild(token.id, { n })));
         let failure;
         try { await req.svc.tokens.delete('missing'); } catch (e) { failure = { name: e.name, message: e.message, status: e.status, data: e.data }; }
         let internal;
         try { await req.svc.tokens.listChildren('boom'); } catch (e) { internal = { message: e.message, status: e.status }; }
         return { raw: { token, again, children, failure, internal } };
       };`,
      {
        args: { value: 'secret' },
        serviceMethods: [
          'tokens.create',
          'tokens.get',
          'tokens.delete',
          'tokens.createChild',
          'tokens.listChildren',
        ],
      },
      async (method, args) => {
        calls.push([method, args]);
        if (method === 'tokens.create') return { id: 't1', data: (args[0] as { data: unknown }).data };
        if (method === 'tokens.get') return { id: args[0], fetched: true };
        if (method === 'tokens.createChild') return { parent: args[0], child: args[1] };
        if (method === 'tokens.delete')
          throw new ServiceCallError('Token not found', 404, { title: 'Not Found' });
        throw new Error('database password is hunter2');
      },
    );
    expect(outcome).toMatchObject({
      ok: true,
      result: {
        raw: {
          token: { id: 't1', data: 'secret' },
          again: { id: 't1', fetched: true },
          children: [
            { parent: 't1', child: { n: 1 } },
            { parent: 't1', child: { n: 2 } },
            { parent: 't1', child: { n: 3 } },
          ],
          failure: {
            name: 'BasisTheoryApiError',
            message: 'Token not found',
            status: 404,
            data: { title: 'Not Found' },
          },
          internal: { message: 'Service call failed', status: 500 },
        },
      },
    });
    expect(calls.map(([method]) => method)).toEqual([
      'tokens.create',
      'tokens.get',
      'tokens.createChild',
      'tokens.createChild',
      'tokens.createChild',
      'tokens.delete',
      'tokens.listChildren',
    ]);
  });

  it('offers the SDK through require and as globals', async () => {
    const outcome = await runCode(
      `const sdk = require('${SDK}');
       module.exports = async () => ({
         raw: {
           names: Object.keys(sdk).sort(),
           same: sdk.BadRequestError === BadRequestError && sdk.ReactorRuntimeError === ReactorRuntimeError,
           instance: new AuthorizationError() instanceof Error,
           hasProcess: typeof process, hasSetTimeout: typeof setTimeout, hasFetch: typeof fetch,
         },
       });`,
    );
    expect(outcome).toMatchObject({
      ok: true,
      result: {
        raw: {
          names: [
            'AuthenticationError',
            'AuthorizationError',
            'BadRequestError',
            'InvalidPaymentMethodError',
            'InvalidReactorConfigurationError',
            'RateLimitError',
            'ReactorRuntimeError',
            'ServiceUnavailableError',
          ],
          same: true,
          instance: true,
          hasProcess: 'undefined',
          hasSetTimeout: 'undefined',
          hasFetch: 'undefined',
        },
      },
    });
  });

  const table: [string, string, number, string, Record<string, string[]> | undefined][] = [
    ['new BadRequestError()', 'BadRequestError', 400, 'Bad Request', undefined],
    [
      "new BadRequestError('card rejected', 'cvc is wrong')",
      'BadRequestError',
      400,
      'card rejected',
      { error: ['cvc is wrong'] },
    ],
    [
      "new InvalidReactorConfigurationError('bad config', { key: 'missing', other: ['a', 2], nested: { x: 1 } })",
      'InvalidReactorConfigurationError',
      400,
      'bad config',
      { key: ['missing'], other: ['a', '2'], nested: ['{"x":1}'] },
    ],
    [
      "new AuthenticationError('who?', ['a', 'b'])",
      'AuthenticationError',
      401,
      'who?',
      { error: ['a', 'b'] },
    ],
    [
      "new InvalidPaymentMethodError(undefined, new Error('expired card'))",
      'InvalidPaymentMethodError',
      402,
      'Invalid Payment Method',
      { error: ['expired card'] },
    ],
    [
      "new AuthorizationError({ card: 'not yours' })",
      'AuthorizationError',
      403,
      'Forbidden',
      { card: ['not yours'] },
    ],
    [
      "new (require('" + SDK + "').RateLimitError)('slow down')",
      'RateLimitError',
      429,
      'slow down',
      undefined,
    ],
    ["new ReactorRuntimeError('broke')", 'ReactorRuntimeError', 500, 'broke', undefined],
    ['new ServiceUnavailableError()', 'ServiceUnavailableError', 503, 'Service Unavailable', undefined],
    ["new Error('x')", 'ReactorRuntimeError', 500, 'x', undefined],
    ["'str'", 'ReactorRuntimeError', 500, 'str', undefined],
    ['42', 'ReactorRuntimeError', 500, 'Reactor Runtime Error', undefined],
    [
      "Object.assign(new Error('fake'), { status: 200, name: 'BadRequestError' })",
      'ReactorRuntimeError',
      500,
      'fake',
      undefined,
    ],
  ];
  it.each(table)('throw %s → %s %i', async (expression, name, status, message, errors) => {
    const outcome = await runCode(`module.exports = async () => { throw ${expression}; };`);
    const error = errorOf(outcome);
    expect(error).toEqual(
      errors === undefined ? { name, status, message } : { name, status, message, errors },
    );
  });

  it('answers ReactorRuntimeError for a syntax error, a non-object result, and a missing export', async () => {
    expect(errorOf(await runCode('module.exports = async function ( {'))).toMatchObject({
      name: 'ReactorRuntimeError',
      status: 500,
      message: expect.stringMatching(/^Reactor code does not compile: Unexpected end of input/) as unknown,
    });
    expect(errorOf(await runCode('module.exports = async () => 42;'))).toEqual({
      name: 'ReactorRuntimeError',
      status: 500,
      message: 'Reactor must return an object',
    });
    expect(errorOf(await runCode('const x = 1;')).message).toMatch(/must export a function/);
    expect(errorOf(await runCode("throw new BadRequestError('top level');")).name).toBe(
      'ReactorRuntimeError',
    );
  });

  it('exports works like module.exports for helpers, and `this` at top level is harmless', async () => {
    const outcome = await runCode(
      `exports.helper = 1; const h = module.exports.helper;
       module.exports = async () => ({ raw: h });`,
    );
    expect(outcome).toMatchObject({ ok: true, result: { raw: 1 } });
  });
});

describe('sandbox: hostile code', () => {
  it('stops a synchronous endless loop (CPU time)', async () => {
    const outcome = await runCode('module.exports = async () => { while (true) {} };');
    expect(errorOf(outcome)).toEqual({
      name: 'ReactorRuntimeError',
      status: 500,
      message: `Reactor exceeded its CPU time of ${LIMITS.cpuTimeMs} ms`,
    });
    await expectHealthy();
  });

  it('stops an endless loop after an await (CPU time, polled by the host)', async () => {
    const outcome = await runCode(
      'module.exports = async (req) => { await req.svc.tokens.get(1); for (;;) {} };',
      { serviceMethods: ['tokens.get'] },
      async () => ({ id: 1 }),
    );
    expect(errorOf(outcome).message).toBe(`Reactor exceeded its CPU time of ${LIMITS.cpuTimeMs} ms`);
    await expectHealthy();
  });

  it('stops a run awaiting a promise that never settles (wall time)', async () => {
    const started = Date.now();
    const outcome = await runCode('module.exports = async () => { await new Promise(() => {}); };');
    expect(errorOf(outcome)).toEqual({
      name: 'ReactorRuntimeError',
      status: 500,
      message: `Reactor exceeded its wall time of ${LIMITS.wallTimeMs} ms`,
    });
    expect(Date.now() - started).toBeLessThan(LIMITS.wallTimeMs + 1_000);
    await expectHealthy();
  });

  it('stops a memory bomb', async () => {
    // CPU time to spare, so that the heap, not the CPU limit, is what a loaded machine hits first.
    const roomy = await createSandboxPool({ limits: { ...LIMITS, cpuTimeMs: 10_000, wallTimeMs: 10_000 } });
    try {
      const outcome = await roomy.run(
        {
          code: `module.exports = async () => {
             const keep = [];
             for (let i = 0; ; i++) keep.push(new Array(1 << 20).fill(i)); // 8 MB a step
           };`,
          args: {},
          configuration: {},
          serviceMethods: null,
        },
        () => Promise.reject(new Error('no svc')),
      );
      expect(errorOf(outcome).message).toBe('Reactor exceeded its memory limit of 64 MB');
    } finally {
      await roomy.close();
    }
    await expectHealthy();
  });

  it('refuses a 100 MB result without copying it out', async () => {
    const outcome = await runCode(
      `module.exports = async () => {
         let s = 'x'.repeat(1 << 20);
         for (let i = 0; i < 7; i++) s = s + s; // a 128 M-character rope: cheap to build
         return { raw: s };
       };`,
    );
    expect(errorOf(outcome)).toEqual({
      name: 'ReactorRuntimeError',
      status: 500,
      message: `Reactor result exceeded the output limit of ${LIMITS.maxOutputBytes} bytes`,
    });
    // Just over the limit once serialised (multi-byte characters): refused too.
    const multiByte = await runCode(
      `module.exports = async () => ({ raw: 'é'.repeat(${Math.floor(LIMITS.maxOutputBytes / 2)}) });`,
    );
    expect(errorOf(multiByte).message).toMatch(/output limit/);
    await expectHealthy();
  });

  it('gives no way to the host process through the constructor chain', async () => {
    const outcome = await runCode(
      `module.exports = async function () {
         const viaThis = (() => { try { return typeof this.constructor.constructor('return process')(); } catch (e) { return e.name; } })();
         const viaFunction = typeof Function('return this')().process;
         const viaRequire = (() => { try { return typeof require.constructor('return process')(); } catch (e) { return e.name; } })();
         const globals = Object.getOwnPropertyNames(globalThis).filter((k) => k.startsWith('__tv'));
         return { raw: { viaThis, viaFunction, viaRequire, globals } };
       };`,
    );
    expect(outcome).toMatchObject({
      ok: true,
      result: {
        raw: {
          viaThis: 'ReferenceError',
          viaFunction: 'undefined',
          viaRequire: 'ReferenceError',
          globals: [],
        },
      },
    });
    const thrown = await runCode(
      "module.exports = async function () { return this.constructor.constructor('return process')().env; };",
    );
    expect(errorOf(thrown)).toMatchObject({ name: 'ReactorRuntimeError', status: 500 });
    expect(errorOf(thrown).message).not.toMatch(/\/work|node_modules|isolated-vm/);
  });

  it('does not leak prototype tampering or req mutations into the next run', async () => {
    // Both runs on the same isolate: a pool of one slot, and the next run only after the first ended.
    const onePool = await createSandboxPool({ limits: LIMITS, concurrencyPerProcess: 1 });
    const runCode = (code: string, run: Partial<SandboxRun> = {}) =>
      onePool.run({ code, args: {}, configuration: {}, serviceMethods: null, ...run }, () =>
        Promise.reject(new Error('no svc')),
      );
    try {
      const tamper = await runCode(
        `Object.prototype.polluted = 1;
       Array.prototype.map = function () { return ['hijacked']; };
       JSON.stringify = () => '{"ok":true,"result":"forged"}';
       globalThis.leftover = 'x';
       BadRequestError.prototype.status = 200;
       module.exports = async (req) => { req.args.changed = true; return { raw: [1].map((x) => x) }; };`,
        { args: { a: 1 } },
      );
      expect(tamper).toMatchObject({ ok: true, result: { raw: ['hijacked'] } });
      const next = await runCode(
        `module.exports = async (req) => ({
         raw: { polluted: ({}).polluted, map: [1, 2].map((x) => x * 2), leftover: typeof leftover, args: req.args },
       });`,
        { args: { a: 1 } },
      );
      expect(next).toEqual(
        expect.objectContaining({
          ok: true,
          result: { raw: { map: [2, 4], leftover: 'undefined', args: { a: 1 } } },
        }),
      );
      const error = await runCode('module.exports = async () => { throw new BadRequestError(); };');
      expect(errorOf(error).status).toBe(400);
    } finally {
      await onePool.close();
    }
  });

  it('runs cached code in a fresh context each time: nothing it sets survives its run', async () => {
    // One slot, so every run is in the same isolate and reuses the script the first one compiled.
    const onePool = await createSandboxPool({ limits: LIMITS, concurrencyPerProcess: 1 });
    const code = `
      let calls = 0;
      globalThis.runs = (globalThis.runs ?? 0) + 1;
      const before = { tampered: ({}).tampered ?? null, stash: globalThis.stash ?? null };
      Object.prototype.tampered = 'by an earlier run';
      module.exports = async (req) => {
        calls += 1;
        globalThis.stash = req.args.secret;
        return { raw: { calls, runs: globalThis.runs, before, secret: req.args.secret } };
      };`;
    try {
      const outcomes: SandboxOutcome[] = [];
      for (const secret of ['first', 'second', 'third']) {
        outcomes.push(
          await onePool.run({ code, args: { secret }, configuration: {}, serviceMethods: null }, noService),
        );
      }
      expect(outcomes.map((outcome) => outcome.codeCached)).toEqual([false, true, true]);
      expect(outcomes.map((outcome) => (outcome.ok ? outcome.result : outcome.error))).toEqual(
        ['first', 'second', 'third'].map((secret) => ({
          raw: { calls: 1, runs: 1, before: { tampered: null, stash: null }, secret },
        })),
      );
    } finally {
      await onePool.close();
    }
  });

  it('lets every run’s context go: one isolate serves many runs without outgrowing its heap', async () => {
    // The isolate is replaced once its heap passes half the memory limit (32 of 64 MB), and a
    // replaced isolate compiles the code again (codeCached false). Each run's context holds an
    // 800 KB array: contexts kept alive after their runs would pass 32 MB within about 40 runs.
    const onePool = await createSandboxPool({
      limits: { ...LIMITS, memoryMb: 64 },
      concurrencyPerProcess: 1,
      maxRunsPerIsolate: 10_000,
    });
    const code = `
      const ballast = new Array(100000).fill(1);
      module.exports = async (req) => ({ raw: req.args.n + ballast.length });`;
    try {
      const cached: (boolean | undefined)[] = [];
      for (let run = 0; run < 150; run++) {
        const outcome = await onePool.run(
          { code, args: { n: run }, configuration: {}, serviceMethods: null },
          noService,
        );
        expect(outcome).toMatchObject({ ok: true, result: { raw: run + 100_000 } });
        cached.push(outcome.codeCached);
      }
      expect(cached.indexOf(false, 1)).toBe(-1);
    } finally {
      await onePool.close();
    }
  });

  it('stops a service-call flood', async () => {
    let calls = 0;
    const outcome = await runCode(
      `module.exports = async (req) => {
         const all = [];
         for (let i = 0; i < 10000; i++) all.push(req.svc.tokens.get(String(i)));
         await Promise.all(all);
         return { raw: 'done' };
       };`,
      { serviceMethods: ['tokens.get'] },
      async () => {
        calls += 1;
        await new Promise((resolve) => setTimeout(resolve, 5));
        return {};
      },
    );
    expect(errorOf(outcome)).toEqual({
      name: 'ReactorRuntimeError',
      status: 500,
      message: `Reactor exceeded its limit of ${LIMITS.maxServiceCalls} service calls`,
    });
    expect(calls).toBeLessThanOrEqual(LIMITS.maxServiceCalls);
    await expectHealthy();
  });

  it('answers Cannot find module for anything but the SDK', async () => {
    const outcome = await runCode("const fs = require('fs'); module.exports = async () => ({ raw: 1 });");
    expect(errorOf(outcome)).toEqual({
      name: 'ReactorRuntimeError',
      status: 500,
      message: "Cannot find module 'fs'",
    });
    const inside = await runCode("module.exports = async () => { require('child_process'); };");
    expect(errorOf(inside).message).toBe("Cannot find module 'child_process'");
  });

  it('keeps a hostile run from stalling the runs beside and behind it', async () => {
    const loop = runCode('module.exports = async () => { while (true) {} };');
    const chain = runCode(
      `module.exports = async () => {
         const spin = () => Promise.resolve().then(spin); // left running after the result
         spin();
         return { raw: 'returned' };
       };`,
    );
    const others = Array.from({ length: 6 }, (_, n) =>
      runCode('module.exports = async (req) => ({ raw: req.args.n });', { args: { n } }),
    );
    const results = await Promise.all(others);
    expect(results.map((outcome) => (outcome.ok ? outcome.result : outcome.error))).toEqual(
      Array.from({ length: 6 }, (_, n) => ({ raw: n })),
    );
    expect(errorOf(await loop).message).toMatch(/CPU time/);
    expect(await chain).toMatchObject({ ok: true, result: { raw: 'returned' } });
    await expectHealthy();
    await expectHealthy();
  });

  const pids = () =>
    execSync(`pgrep -P ${process.pid} -f 'sandbox/src/[c]hild.ts' || true`, { encoding: 'utf8' })
      .trim()
      .split('\n')
      .filter(Boolean);

  it('never passes its child process’s output on (an uncaught error’s text can quote a run’s data): only its size is logged', async () => {
    const [pid] = pids();
    const logged = logs.length;
    // SIGUSR1 makes Node print where its inspector listens (or why it could not) on stderr.
    process.kill(Number(pid), 'SIGUSR1');
    await vi.waitFor(() => {
      const outputs = logs.slice(logged).filter((entry) => entry.message.includes('wrote output'));
      expect(outputs[0]?.details).toEqual({
        pid: Number(pid),
        stream: 'stderr',
        bytes: expect.any(Number) as unknown,
      });
    });
    expect(JSON.stringify(logs.slice(logged))).not.toMatch(/inspector|Debugger|ws:/i);
    await expectHealthy();
  });

  it('survives the death of its child process mid-run', async () => {
    const before = pids();
    expect(before).toHaveLength(1);
    const running = runCode('module.exports = async () => { await new Promise(() => {}); };');
    await new Promise((resolve) => setTimeout(resolve, 200));
    process.kill(Number(before[0]), 'SIGKILL');
    expect(errorOf(await running)).toEqual({
      name: 'ReactorRuntimeError',
      status: 500,
      message: 'Reactor sandbox process exited unexpectedly',
    });
    await expectHealthy(); // queued until the replacement is ready
    const after = pids();
    expect(after).toHaveLength(1);
    expect(after[0]).not.toBe(before[0]);
  });
});

describe('checkSyntax', () => {
  it('accepts code that compiles, without running it', () => {
    expect(checkSyntax('module.exports = async function (req) { while (true) {} };')).toEqual({ ok: true });
    expect(checkSyntax("throw new Error('never run')")).toEqual({ ok: true });
  });

  it('refuses code that does not compile, with the line', () => {
    const result = checkSyntax('module.exports = async function (req) {\n  return { raw: 1 ;\n};');
    expect(result).toMatchObject({ ok: false, line: 2 });
    expect(checkSyntax('function f() { let a; let a; }')).toMatchObject({ ok: false });
  });
});

describe('sandbox: timings (printed, not asserted)', () => {
  it('measures warm runs and a cold isolate', async () => {
    const code = 'module.exports = async (req) => ({ raw: req.args.n * 2 });';
    for (let i = 0; i < 20; i++) await runCode(code, { args: { n: i } });
    const samples: number[] = [];
    for (let i = 0; i < 200; i++) {
      const started = performance.now();
      const outcome = await runCode(code, { args: { n: i } });
      samples.push(performance.now() - started);
      expect(outcome.ok).toBe(true);
    }
    samples.sort((a, b) => a - b);
    const p = (q: number) => samples[Math.floor(q * (samples.length - 1))]!.toFixed(2);
    console.log(
      `warm run (pool.run round trip), 200 runs: p50 ${p(0.5)} ms, p90 ${p(0.9)} ms, p99 ${p(0.99)} ms`,
    );

    const started = performance.now();
    const cold = await createSandboxPool({ limits: LIMITS, concurrencyPerProcess: 1 });
    const spawned = performance.now() - started;
    const first = performance.now();
    await cold.run({ code, args: { n: 1 }, configuration: {}, serviceMethods: null }, noService);
    const firstRun = performance.now() - first;
    await cold.close();
    console.log(
      `cold: new child process + warm isolate ${spawned.toFixed(1)} ms; its first run ${firstRun.toFixed(2)} ms`,
    );
  });
});
