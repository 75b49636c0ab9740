import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '@tokenvault/platform/testing';
import { startStack, useStack, type TestStack } from './support/stack.ts';
import { parsePrometheusText, type Exposition } from './support/prometheus.ts';
import { createReactor, echoArgs, react } from './support/reactors.ts';

/** The metric names docs/metrics.md documents (the first column of its table). */
const documentedNames = [
  ...readFileSync(new URL('../docs/metrics.md', import.meta.url), 'utf8').matchAll(
    /^\| `(tokenvault_[a-z0-9_]+)`/gm,
  ),
].map((match) => match[1]!);

async function scrape(stack: TestStack, headers: Record<string, string> = {}): Promise<Exposition> {
  const response = await fetch(`${stack.url}/metrics`, { headers });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parsePrometheusText(await response.text());
}

const tokenBody = {
  type: 'card',
  data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2030, cvc: '123' },
};

describe('GET /metrics', () => {
  const env = useStack();

  it('is Prometheus text holding every documented metric, all named tokenvault_*', async () => {
    expect(documentedNames.length).toBeGreaterThan(10);
    const metrics = await scrape(env.stack);
    const families = [...metrics.types.keys()];
    for (const name of documentedNames) expect(families, name).toContain(name);
    for (const family of families) expect(family).toMatch(/^tokenvault_/);
    for (const sample of metrics.samples) expect(sample.name).toMatch(/^tokenvault_/);
    expect(metrics.types.get('tokenvault_http_requests_total')).toBe('counter');
    expect(metrics.types.get('tokenvault_http_request_duration_seconds')).toBe('histogram');
    expect(metrics.types.get('tokenvault_queue_jobs')).toBe('gauge');
  });

  it('counts requests per route template and status, never per raw path', async () => {
    const { client } = env.tenant;
    const created = await client.request<{ id: string }>('POST', '/tokens', { body: tokenBody });
    expect(created.status).toBe(201);
    const labels = { method: 'GET', route: '/tokens/:id', status: '200' };
    const before = await scrape(env.stack);
    for (let i = 0; i < 3; i++)
      expect((await client.request('GET', `/tokens/${created.body.id}`)).status).toBe(200);
    expect((await client.request('GET', '/no/such/route/unmatched-path-marker')).status).toBe(404);
    const after = await scrape(env.stack);

    expect(after.value('tokenvault_http_requests_total', labels)).toBe(
      before.value('tokenvault_http_requests_total', labels) + 3,
    );
    expect(after.value('tokenvault_http_request_duration_seconds_count', labels)).toBe(
      before.value('tokenvault_http_request_duration_seconds_count', labels) + 3,
    );
    const unmatched = { method: 'GET', route: '(unmatched)', status: '404' };
    expect(after.value('tokenvault_http_requests_total', unmatched)).toBe(
      before.value('tokenvault_http_requests_total', unmatched) + 1,
    );
    expect(
      after.value('tokenvault_http_requests_total', { route: '/tokens', status: '201' }),
    ).toBeGreaterThanOrEqual(1);
    // No label value anywhere holds the id or the unmatched path.
    const text = await (await fetch(`${env.stack.url}/metrics`)).text();
    expect(text).not.toContain(created.body.id);
    expect(text).not.toContain('unmatched-path-marker');
  });

  it('counts event-store appends, and reads processor lag and queue depth at scrape', async () => {
    const before = await scrape(env.stack);
    expect((await env.tenant.client.request('POST', '/tokens', { body: tokenBody })).status).toBe(201);
    const after = await scrape(env.stack);
    const ok = { category: 'tokens.token', outcome: 'ok' };
    expect(after.value('tokenvault_eventstore_appends_total', ok)).toBe(
      before.value('tokenvault_eventstore_appends_total', ok) + 1,
    );
    expect(
      after.value('tokenvault_eventstore_events_appended_total', { category: 'tokens.token' }),
    ).toBeGreaterThan(
      before.value('tokenvault_eventstore_events_appended_total', { category: 'tokens.token' }),
    );
    expect(
      after.value('tokenvault_eventstore_append_duration_seconds_count', { outcome: 'ok' }),
    ).toBeGreaterThan(before.value('tokenvault_eventstore_append_duration_seconds_count', { outcome: 'ok' }));

    // Each checkpoint row is a processor; the projector catches up (read-your-writes waited for it).
    const processors = after.samples
      .filter((sample) => sample.name === 'tokenvault_processor_lag_events')
      .map((sample) => sample.labels.processor);
    expect(processors).toEqual(expect.arrayContaining(['read-models', 'invitation-mail-enqueuer']));
    await eventually(async () => {
      const now = await scrape(env.stack);
      expect(now.value('tokenvault_processor_lag_events', { processor: 'read-models' })).toBe(0);
      expect(now.value('tokenvault_processor_lag_seconds', { processor: 'read-models' })).toBe(0);
    });
    // A processor that never ran (its checkpoint at the origin) is behind by every event so far.
    const pool = env.stack.service.runtime.ownerPool;
    await pool.query(
      `INSERT INTO projection_checkpoints (name, commit_position, prepare_position) VALUES ('stopped', '0', 0)`,
    );
    const { rows } = await pool.query<{ count: number }>('SELECT count(*)::int AS count FROM es_events');
    await new Promise((resolve) => setTimeout(resolve, 1_100)); // past the lag gauges' 1 s cache
    const stopped = await scrape(env.stack);
    expect(stopped.value('tokenvault_processor_lag_events', { processor: 'stopped' })).toBe(rows[0]!.count);
    expect(stopped.value('tokenvault_processor_lag_seconds', { processor: 'stopped' })).toBeGreaterThan(0);
    await pool.query(`DELETE FROM projection_checkpoints WHERE name = 'stopped'`);

    const queues = after.samples.filter((sample) => sample.name === 'tokenvault_queue_jobs');
    for (const queue of ['invitation-email', 'reactor-run']) {
      for (const state of ['waiting', 'active', 'delayed', 'failed']) {
        expect(
          queues.some((s) => s.labels.queue === queue && s.labels.state === state),
          `${queue} ${state}`,
        ).toBe(true);
      }
    }
  });

  it('measures reactor runs: outcomes by name, durations, and the queue’s completed jobs', async () => {
    const before = await scrape(env.stack);
    const echo = await createReactor(env.tenant, { code: echoArgs });
    const failing = await createReactor(env.tenant, {
      code: "module.exports = async function () { throw new BadRequestError('no', { card: 'bad' }); };",
    });
    expect((await react(env.tenant, echo, { a: 1 })).status).toBe(200);
    expect((await react(env.tenant, echo, { a: 2 })).status).toBe(200);
    expect((await react(env.tenant, failing, {})).status).toBe(400);

    await eventually(async () => {
      const after = await scrape(env.stack);
      const delta = (name: string, labels: Record<string, string>) =>
        after.value(name, labels) - before.value(name, labels);
      expect(delta('tokenvault_reactor_runs_total', { outcome: 'ok' })).toBe(2);
      expect(delta('tokenvault_reactor_runs_total', { outcome: 'BadRequestError' })).toBe(1);
      expect(delta('tokenvault_reactor_run_duration_seconds_count', { result: 'ok' })).toBe(2);
      expect(delta('tokenvault_reactor_run_duration_seconds_count', { result: 'error' })).toBe(1);
      expect(delta('tokenvault_reactor_run_duration_seconds_sum', { result: 'ok' })).toBeGreaterThan(0);
      // A reactor's own error is an outcome, not a failed job.
      expect(delta('tokenvault_queue_jobs_total', { queue: 'reactor-run', outcome: 'completed' })).toBe(3);
      expect(delta('tokenvault_queue_jobs_total', { queue: 'reactor-run', outcome: 'failed' })).toBe(0);
      expect(
        delta('tokenvault_http_requests_total', {
          method: 'POST',
          route: '/reactors/:id/react',
          status: '200',
        }),
      ).toBe(2);
    });
  });
});

describe('GET /metrics with METRICS_TOKEN', () => {
  let stack: TestStack;
  const token = 'metrics-token-0123456789';
  beforeAll(async () => {
    stack = await startStack({ METRICS_TOKEN: token });
  });
  afterAll(async () => stack?.stop());

  it('answers only the bearer of the token', async () => {
    for (const authorization of [undefined, 'Bearer wrong-token', `Basic ${token}`]) {
      const response = await fetch(`${stack.url}/metrics`, {
        headers: authorization ? { authorization } : {},
      });
      expect(response.status).toBe(401);
      expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(response.headers.get('www-authenticate')).toMatch(/^Bearer/);
    }
    const metrics = await scrape(stack, { authorization: `Bearer ${token}` });
    expect(metrics.types.has('tokenvault_http_requests_total')).toBe(true);
  });
});
