import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { eventually } from '@tokenvault/platform/testing';
import { useStack } from './support/stack.ts';
import { everyRedisValue } from './support/redis.ts';
import { createReactor, echoArgs, react } from './support/reactors.ts';

describe('hostile reactor code', () => {
  // Small limits keep the suite quick; each case must still end in a clear error.
  const env = useStack({
    LOG_LEVEL: 'warn',
    REACTOR_TIMEOUT_MS: '1500',
    REACTOR_CPU_TIME_MS: '1000',
    REACTOR_MEMORY_MB: '64',
    REACTOR_MAX_SERVICE_CALLS: '50',
  });

  /** What every hostile case must leave behind: a healthy service and a next run that works. */
  const expectServiceAndNextRunFine = async () => {
    expect((await env.stack.client.request('GET', '/healthz')).status).toBe(200);
    const next = await createReactor(env.tenant, {
      code: echoArgs,
      request_parameters: [{ name: 'after', type: 'string' }],
    });
    expect((await react(env.tenant, next, { after: 'fine' })).body).toEqual({ raw: { after: 'fine' } });
  };

  const hostile: [string, string, RegExp][] = [
    ['an endless loop', 'module.exports = async () => { while (true) {} };', /CPU time|wall time/],
    ['a promise that never settles', 'module.exports = () => new Promise(() => {});', /wall time/],
    [
      'a memory bomb',
      'module.exports = async () => { const hoard = []; for (;;) hoard.push(new Array(2e6).fill(0.5)); };',
      // On a loaded machine V8's last-ditch collections near the heap limit can use up the CPU time
      // first: either limit is a clear error here (the memory limit alone: sandbox.int.spec.ts).
      /memory limit|CPU time/,
    ],
    [
      'a 100 MB string',
      'module.exports = async () => ({ raw: "x".repeat(100 * 1024 * 1024) });',
      /output limit|memory limit/,
    ],
    [
      'an escape through the constructor chain',
      "module.exports = async function () { const p = this.constructor.constructor('return process')(); return { raw: p.env }; };",
      /process is not defined|Cannot read properties of undefined/,
    ],
    [
      'require of a host module',
      "module.exports = async () => ({ raw: require('fs').readFileSync('/etc/passwd', 'utf8') });",
      /Cannot find module 'fs'/,
    ],
    [
      'a flood of host calls',
      'module.exports = async (req) => { await Promise.all(Array.from({ length: 10000 }, () => req.svc.tokens.retrieve("x").catch(() => null))); return { raw: "flooded" }; };',
      /limit of 50 service calls/,
    ],
    [
      'a tokenize block of thousands of tokens',
      'module.exports = async () => ({ tokenize: Object.fromEntries(Array.from({ length: 5000 }, (_, i) => ["t" + i, { data: i }])) });',
      /tokenize holds more than 50 tokens/,
    ],
  ];

  it.each(hostile)(
    '%s answers a clear error, and the service and the next run are fine',
    async (_, code, reason) => {
      const application = await env.tenant.client.applications.create({
        name: 'svc',
        type: 'private',
        permissions: ['token:read'],
      });
      const reactor = await createReactor(env.tenant, { code }, { applicationId: application.id });
      const response = await react(env.tenant, reactor);
      expect(response.status).toBeGreaterThanOrEqual(400);
      expect(response.headers.get('content-type')).toContain('application/problem+json');
      expect(response.body.detail).toMatch(reason);
      expect(response.body.detail).not.toMatch(/\/etc\/passwd|root:/);
      await expectServiceAndNextRunFine();
    },
  );

  it('keeps prototype tampering and changes to req out of the next run', async () => {
    const tamper = await createReactor(env.tenant, {
      code: `module.exports = async (req) => {
        Object.prototype.polluted = 'yes';
        Array.prototype.map = () => 'hijacked';
        JSON.stringify = () => '"hijacked"';
        req.args.injected = true;
        globalThis.leftBehind = 'still here';
        return { raw: 'tampered' };
      };`,
    });
    expect((await react(env.tenant, tamper)).body).toEqual({ raw: 'tampered' });
    const probe = await createReactor(env.tenant, {
      code: `module.exports = async (req) => ({ raw: {
        polluted: ({}).polluted ?? null,
        mapped: [1, 2].map((x) => x * 2),
        json: JSON.stringify({ a: 1 }),
        injected: req.args.injected ?? null,
        leftBehind: globalThis.leftBehind ?? null,
      } });`,
    });
    expect((await react(env.tenant, probe)).body).toEqual({
      raw: { polluted: null, mapped: [2, 4], json: '{"a":1}', injected: null, leftBehind: null },
    });
    await expectServiceAndNextRunFine();
  });

  it('runs a reactor’s compiled code again in a fresh context: nothing of an earlier run remains', async () => {
    const reactor = await createReactor(env.tenant, {
      code: `let calls = 0;
        globalThis.runs = (globalThis.runs ?? 0) + 1;
        const earlier = globalThis.stash ?? null;
        module.exports = async (req) => {
          calls += 1;
          globalThis.stash = req.args.secret;
          return { raw: { calls, runs: globalThis.runs, earlier, secret: req.args.secret } };
        };`,
      request_parameters: [{ name: 'secret', type: 'string' }],
    });
    // More runs than the worker has isolates, so that some reuse the code another run compiled.
    const secrets = Array.from({ length: 8 }, (_, index) => `secret-${index}`);
    for (const secret of secrets) {
      expect((await react(env.tenant, reactor, { secret })).body).toEqual({
        raw: { calls: 1, runs: 1, earlier: null, secret },
      });
    }
  });

  it('a formula reading another tenant’s token through svc gets a 404 and none of its data', async () => {
    const other = await env.stack.createTenant('Other');
    const secret = `THEIRS-${randomUUID()}`;
    const theirs = await other.client.tokens.create({ data: { secret }, metadata: { note: secret } });
    const mine = await env.tenant.client.tokens.create({ data: 'mine' });
    const application = await env.tenant.client.applications.create({
      name: 'reader',
      type: 'private',
      permissions: ['token:read'],
    });
    const reactor = await createReactor(
      env.tenant,
      {
        code: `module.exports = async (req) => {
          const attempt = async (call) => {
            try { return { answered: await call() }; }
            catch (error) { return { name: error.name, status: error.status, message: error.message, data: error.data }; }
          };
          return { raw: {
            own: await attempt(() => req.svc.tokens.retrieve(req.args.own)),
            theirs: await attempt(() => req.svc.tokens.retrieve(req.args.theirs)),
            theirChildren: await attempt(() => req.svc.tokens.listChildren(req.args.theirs)),
          } };
        };`,
        request_parameters: [
          { name: 'own', type: 'string' },
          { name: 'theirs', type: 'string' },
        ],
      },
      { applicationId: application.id },
    );
    const response = await react(env.tenant, reactor, { own: mine.id, theirs: theirs.id });
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    const notFound = {
      name: 'BasisTheoryApiError',
      status: 404,
      message: 'No token with this id.',
      data: { type: expect.any(String), title: 'Not Found', status: 404, detail: 'No token with this id.' },
    };
    // The same client reads the tenant's own token: the 404 is the other tenant's, not a broken svc.
    expect(response.body.raw).toEqual({
      own: { answered: expect.objectContaining({ id: mine.id, data: 'mine' }) },
      theirs: notFound,
      theirChildren: notFound,
    });
    expect(JSON.stringify(response.body)).not.toContain(secret);
    await expectServiceAndNextRunFine();
  });
});

describe('detokenized data in Redis', () => {
  const env = useStack({ LOG_LEVEL: 'warn' });

  it('never holds a reactor’s arguments or results in the clear, sync or async', async () => {
    const marker = `MARKER-${randomUUID()}`;
    const token = await env.tenant.client.tokens.create({ data: { secret: marker } });
    const reactor = await createReactor(env.tenant, {
      code: `module.exports = async (req) => ({ raw: { echoed: req.args.value, again: JSON.stringify(req.args) } });`,
      request_parameters: [{ name: 'value', type: 'object' }],
    });
    const sync = await react(env.tenant, reactor, { value: `{{${token.id}}}` });
    expect(JSON.stringify(sync.body)).toContain(marker);
    const accepted = await env.tenant.client.request<{ async_reactor_request_id: string }>(
      'POST',
      `/reactors/${reactor}/react-async`,
      { body: { args: { value: `{{${token.id}}}` } } },
    );
    await eventually(async () => {
      const polled = await env.tenant.client.request<{ status: string }>(
        'GET',
        `/reactors/${reactor}/results/${accepted.body.async_reactor_request_id}`,
      );
      expect(polled.body.status).toBe('completed');
      expect(JSON.stringify(polled.body)).toContain(marker);
    });
    const values = await everyRedisValue(env.stack.config.REDIS_URL);
    expect(values.length).toBeGreaterThan(0);
    expect(values.filter((value) => value.includes(marker))).toEqual([]);
    expect(env.stack.logs.join('\n')).not.toContain(marker);
  });
});
