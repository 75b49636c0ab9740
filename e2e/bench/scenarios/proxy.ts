// Proxy scenarios of the benchmark: a JSON POST with one card number, sent straight to a
// destination on loopback, the same through the ephemeral proxy with the number detokenized from a
// card token (`{{ <id> | json: '$.number' }}`), and through a pre-configured proxy with one `code`
// request transform (a sandbox run on the reactor queue), in one run, so each one's cost is the
// difference. The destination runs in the bench process and answers 200 with a small JSON body.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { measureHttp } from '../support/measure.ts';
import type { Row, Target } from '../support/report.ts';
import { postCreated } from '../support/service-api.ts';
import type { Stack } from '../support/stack.ts';

const card = { number: '4242424242424242', expiration_month: 12, expiration_year: 2030 };

export interface ProxyRows {
  direct: Row;
  proxied: Row;
  transformed: Row;
}

/** A transform that touches the body (what a real one does), answering at once. */
const transformCode = `module.exports = async function (req) {
  return { headers: req.args.headers, body: { ...req.args.body, transformed: true } };
};`;

async function createTransformProxy(stack: Stack, destinationUrl: string): Promise<string> {
  const proxy = await postCreated<{ key: string }>(stack.serviceUrl, stack.apiKey, '/proxies', {
    name: 'bench transform',
    destination_url: destinationUrl,
    request_transforms: [{ type: 'code', code: transformCode }],
  });
  return proxy.key;
}

async function startDestination(): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"id":"ch_1","status":"succeeded"}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export async function measureProxy(stack: Stack): Promise<ProxyRows> {
  const { id } = await postCreated(stack.serviceUrl, stack.apiKey, '/tokens', { type: 'card', data: card });
  const destination = await startDestination();
  const connections = 8;
  const json = { 'content-type': 'application/json' };
  try {
    const direct = await measureHttp(
      {
        name: 'POST straight to the destination (1 card number)',
        url: `${destination.url}/v1/charges`,
        method: 'POST',
        headers: json,
        body: JSON.stringify({ amount: 1000, number: card.number }),
      },
      { connections, note: () => `${connections} connections; the bench process's own HTTP server` },
    );
    const proxied = await measureHttp(
      {
        name: 'POST /proxy/** (1 card token detokenized)',
        url: `${stack.serviceUrl}/proxy/v1/charges`,
        method: 'POST',
        headers: { ...stack.auth, ...json, 'svc-proxy-url': destination.url },
        body: JSON.stringify({ amount: 1000, number: `{{ ${id} | json: '$.number' }}` }),
      },
      { connections, note: () => `${connections} connections; kept-alive connections to the destination` },
    );
    const proxyKey = await createTransformProxy(stack, destination.url);
    const transformed = await measureHttp(
      {
        name: 'POST /proxy/** (1 card token, 1 code transform)',
        url: `${stack.serviceUrl}/proxy/v1/charges`,
        method: 'POST',
        headers: { ...stack.auth, ...json, 'svc-proxy-key': proxyKey },
        body: JSON.stringify({ amount: 1000, number: `{{ ${id} | json: '$.number' }}` }),
      },
      { connections, note: () => `${connections} connections; a sandbox run per request` },
    );
    return { direct: direct.row, proxied: proxied.row, transformed: transformed.row };
  } finally {
    await destination.close();
  }
}

/** The proxy's added p99 over the direct request's, below `limitMs`. */
export function addedP99Target(row: Row, baseline: Row, limitMs: number): Target {
  const added = row.p99Ms - baseline.p99Ms;
  return {
    name: `${row.scenario}: p99 added`,
    measured: `${added.toFixed(1)} ms`,
    goal: `< ${limitMs} ms`,
    met: added < limitMs,
  };
}
