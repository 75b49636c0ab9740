// Webhooks: a webhook subscribed to token:created, its receiver an HTTP server on loopback in this
// process, while a POST /tokens load runs: the deliveries' rate and their lag behind the append.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { log } from '../support/log.ts';
import { measureHttp, percentile } from '../support/measure.ts';
import type { Row } from '../support/report.ts';
import type { Stack } from '../support/stack.ts';
import { postTokensScenario } from './http-vs-baseline.ts';

/** Rows: POST /tokens with deliveries running, and the delivery lag (append → receiver) with its rate. */
export async function measureWebhookDeliveries(stack: Stack): Promise<Row[]> {
  /** Event id → when the receiver first had it. */
  const received = new Map<string, number>();
  let duplicates = 0;
  const receiver = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const at = Date.now();
      const { id } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: string };
      if (received.has(id)) duplicates++;
      else received.set(id, at);
      response.statusCode = 204;
      response.end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  try {
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/bench`;
    const created = await fetch(`${stack.serviceUrl}/webhooks`, {
      method: 'POST',
      headers: { ...stack.auth, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Bench', url, events: ['token:created'] }),
    });
    if (created.status !== 201) throw new Error(`the bench webhook was refused: ${await created.text()}`);
    const withDeliveries = await measureHttp(
      postTokensScenario(stack, 'POST /tokens, a webhook subscribed'),
      {
        note: () => 'one webhook on token:created; receiver on loopback answers 204',
      },
    );
    const { rows } = await stack.servicePool.query<{ event_id: string; created_ms: number }>(
      `SELECT event_id::text, extract(epoch FROM created_at)::float8 * 1000 AS created_ms
       FROM es_events
       WHERE event_type = 'TokenCreated' AND created_at >= to_timestamp($1 / 1000.0) AND created_at < to_timestamp($2 / 1000.0)`,
      [withDeliveries.window.fromMs, withDeliveries.window.toMs],
    );
    const deadline = Date.now() + 120_000;
    while (rows.some((row) => !received.has(row.event_id)) && Date.now() < deadline) await sleep(100);
    const lags: number[] = [];
    let missing = 0;
    for (const row of rows) {
      const at = received.get(row.event_id);
      if (at === undefined) missing++;
      else lags.push(at - row.created_ms);
    }
    lags.sort((a, b) => a - b);
    const firstMs = Math.min(...rows.map((row) => received.get(row.event_id) ?? Infinity));
    const lastMs = Math.max(...rows.map((row) => received.get(row.event_id) ?? 0));
    log(`webhooks: ${lags.length} deliveries, ${missing} missing, ${duplicates} duplicates`);
    return [
      withDeliveries.row,
      {
        scenario: 'Webhook delivery lag under POST /tokens load',
        rate: lags.length / Math.max(0.001, (lastMs - firstMs) / 1000),
        p50Ms: percentile(lags, 50),
        p99Ms: percentile(lags, 99),
        failures: missing,
        errors: 0,
        note: `deliveries/s, first to last; API write (append) → receiver; ${lags.length} deliveries; ${duplicates} duplicates`,
      },
    ];
  } finally {
    await new Promise((resolve) => receiver.close(resolve));
  }
}
