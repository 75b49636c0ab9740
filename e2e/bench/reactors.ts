// Reactor scenarios of the benchmark: a trivial reactor (answers its args), one that detokenizes
// a card token, and the sandbox alone (a fresh context and a run in a warm isolate, no queue and
// no HTTP), so the queue and HTTP overhead of an invocation is visible beside it.
import { createSandboxPool } from '@tokenvault/sandbox';

const echoCode = 'module.exports = async function (req) { return { raw: req.args }; };';

async function post(
  serviceUrl: string,
  apiKey: string,
  path: string,
  body: unknown,
): Promise<{ id: string }> {
  const response = await fetch(`${serviceUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'svc-api-key': apiKey },
    body: JSON.stringify(body),
  });
  if (response.status !== 201) throw new Error(`POST ${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as { id: string };
}

export interface ReactorScenarios {
  /** [name, path, body] of each invocation scenario. */
  invocations: [string, string, string][];
}

/** A formula, a trivial reactor and a card-reading reactor, and a card token for it. */
export async function seedReactors(serviceUrl: string, apiKey: string): Promise<ReactorScenarios> {
  const formula = await post(serviceUrl, apiKey, '/reactor-formulas', {
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
  const reactor = await post(serviceUrl, apiKey, '/reactors', {
    name: 'echo',
    configuration: {},
    formula: { id: formula.id },
  });
  const card = await post(serviceUrl, apiKey, '/tokens', {
    type: 'card',
    data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2030 },
  });
  const path = `/reactors/${reactor.id}/react`;
  return {
    invocations: [
      ['POST /reactors/{id}/react, trivial', path, JSON.stringify({ args: { message: 'hello' } })],
      [
        'POST /reactors/{id}/react, 1 card token',
        path,
        JSON.stringify({ args: { card: `{{ ${card.id} }}` } }),
      ],
    ],
  };
}

/** The sandbox alone: `runs` sequential runs of the trivial formula in a warm pool, in ms. */
export async function measureSandboxOnly(runs: number): Promise<number[]> {
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
