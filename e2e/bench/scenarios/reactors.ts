// Reactor scenarios of the benchmark: a trivial reactor (answers its args), one that detokenizes
// a card token, and the sandbox alone (a fresh context and a run in a warm isolate, no queue and
// no HTTP), so the queue and HTTP overhead of an invocation is visible beside it. The invocations
// run at 8 connections.
import { createSandboxPool } from '@tokenvault/sandbox';
import { log } from '../support/log.ts';
import { measureHttp, percentile } from '../support/measure.ts';
import type { Row } from '../support/report.ts';
import { postCreated } from '../support/service-api.ts';
import { serviceCost, type Stack } from '../support/stack.ts';

const echoCode = 'module.exports = async function (req) { return { raw: req.args }; };';

/** One invocation scenario: POST `body` to `path`. */
interface Invocation {
  name: string;
  path: string;
  body: string;
}

/** A formula, a trivial reactor and a card-reading reactor, and a card token for it. */
async function seedReactors(
  serviceUrl: string,
  apiKey: string,
): Promise<{ trivial: Invocation; cardToken: Invocation }> {
  const formula = await postCreated(serviceUrl, apiKey, '/reactor-formulas', {
    name: 'echo',
    type: 'private',
    code: echoCode,
    configuration: [],
    request_parameters: [
      { name: 'message', type: 'string', optional: true },
      { name: 'card.number', type: 'string', optional: true },
      { name: 'card.expiration_month', type: 'number', optional: true },
    ],
  });
  const reactor = await postCreated(serviceUrl, apiKey, '/reactors', {
    name: 'echo',
    configuration: {},
    formula: { id: formula.id },
  });
  const card = await postCreated(serviceUrl, apiKey, '/tokens', {
    type: 'card',
    data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2030 },
  });
  const path = `/reactors/${reactor.id}/react`;
  return {
    trivial: {
      name: 'POST /reactors/{id}/react, trivial',
      path,
      body: JSON.stringify({ args: { message: 'hello' } }),
    },
    cardToken: {
      name: 'POST /reactors/{id}/react, 1 card token',
      path,
      body: JSON.stringify({ args: { card: `{{ ${card.id} }}` } }),
    },
  };
}

export interface ReactorRows {
  trivial: Row;
  cardToken: Row;
  sandboxAlone: Row;
}

export async function measureReactors(stack: Stack): Promise<ReactorRows> {
  const { trivial, cardToken } = await seedReactors(stack.serviceUrl, stack.apiKey);
  const connections = 8;
  const measureInvocation = async ({ name, path, body }: Invocation) =>
    (
      await measureHttp(
        { name, url: `${stack.serviceUrl}${path}`, method: 'POST', headers: stack.auth, body },
        {
          connections,
          cost: serviceCost(stack),
          note: () => `${connections} connections; a BullMQ job each`,
        },
      )
    ).row;
  return {
    trivial: await measureInvocation(trivial),
    cardToken: await measureInvocation(cardToken),
    sandboxAlone: await measureSandboxAlone(2_000),
  };
}

async function measureSandboxAlone(runs: number): Promise<Row> {
  log(`sandbox alone: ${runs} sequential runs in a warm pool`);
  const durations = await sandboxRunDurations(runs);
  return {
    scenario: 'sandbox alone (fresh context + run, warm isolate)',
    rate: runs / (durations.reduce((sum, ms) => sum + ms, 0) / 1000),
    p50Ms: percentile(durations, 50),
    p99Ms: percentile(durations, 99),
    failures: 0,
    errors: 0,
    note: `${runs} sequential runs, in-process pool of one child process`,
  };
}

/** The sandbox alone: `runs` sequential runs of the trivial formula in a warm pool, in ms. */
async function sandboxRunDurations(runs: number): Promise<number[]> {
  const pool = await createSandboxPool({
    limits: {
      memoryMb: 128,
      cpuTimeMs: 5_000,
      wallTimeMs: 10_000,
      maxOutputBytes: 1 << 20,
      maxServiceCalls: 100,
    },
    processes: 1,
  });
  try {
    const run = () =>
      pool.run({ code: echoCode, args: { message: 'hello' }, configuration: {}, serviceMethods: null }, () =>
        Promise.reject(new Error('no svc in the benchmark')),
      );
    for (let warm = 0; warm < 50; warm++) await run();
    const durations: number[] = [];
    for (let index = 0; index < runs; index++) {
      const started = performance.now();
      const outcome = await run();
      if (!outcome.ok) throw new Error(`sandbox run failed: ${outcome.error.message}`);
      durations.push(performance.now() - started);
    }
    return durations.sort((a, b) => a - b);
  } finally {
    await pool.close();
  }
}
