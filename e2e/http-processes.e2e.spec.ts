import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '@tokenvault/platform/testing';
import { parsePrometheusText } from './support/prometheus.ts';
import {
  call,
  type Answer,
  requestsTakenByProcess,
  startServiceWithHttpProcesses,
  statusesOf,
  type ServiceWithHttpProcesses,
} from './support/http-processes.ts';

/*
 * `npm start` with HTTP_PROCESSES=2 (a child process, as an operator runs it): the primary keeps
 * the processors and the worker, two HTTP processes share the port. /metrics' per-process request
 * counts show which processes answered. What an attacker would try across the processes (a rate
 * limit taken twice, a revoked key in the other process's cache) is e2e/attacks/http-processes.
 */
describe('HTTP_PROCESSES=2: the all-in-one serves HTTP from two processes', () => {
  let running: ServiceWithHttpProcesses;
  beforeAll(async () => {
    running = await startServiceWithHttpProcesses();
  }, 420_000);
  afterAll(async () => running?.stop());

  const metrics = async () => parsePrometheusText(String((await call(running.url, 'GET', '/metrics')).body));

  it('answers from both processes, is ready while both are up, and /metrics counts them together', async () => {
    expect(await call(running.url, 'GET', '/readyz')).toEqual({
      status: 200,
      body: { status: 'ready', checks: { postgres: 'ok', redis: 'ok', processes: 'ok' } },
    });
    const healthz = { method: 'GET', route: '/healthz', status: '200' };
    const before = await metrics();
    const takenBefore = await requestsTakenByProcess(running.url);
    expect(await statusesOf(running.url, 20, '/healthz')).toEqual(Array(20).fill(200));
    const after = await metrics();
    const takenAfter = await requestsTakenByProcess(running.url);
    expect([...takenAfter.keys()].sort()).toEqual(['1', '2']);
    for (const process of ['1', '2'])
      expect(takenAfter.get(process)! - (takenBefore.get(process) ?? 0)).toBeGreaterThanOrEqual(5);
    // The count is both processes' together: one process's share would be about half.
    expect(after.value('tokenvault_http_requests_total', healthz)).toBe(
      before.value('tokenvault_http_requests_total', healthz) + 20,
    );
    // No pid reaches a client: the processes are told apart by their number only.
    const text = String((await call(running.url, 'GET', '/metrics')).body);
    for (const pid of running.listeningPids()) expect(text).not.toContain(`"${pid}"`);
  });

  it("runs a reactor from both processes on the primary's worker, and runs its configuration updated through one process in the other at once", async () => {
    const { url, ownerKey } = running;
    const formula = await call(url, 'POST', '/reactor-formulas', {
      key: ownerKey,
      body: {
        name: 'greeting',
        type: 'private',
        code: 'module.exports = async (req) => ({ raw: req.configuration.greeting });',
        configuration: [{ name: 'greeting', type: 'string' }],
        request_parameters: [],
      },
    });
    expect(formula.status, JSON.stringify(formula.body)).toBe(201);
    const reactor = await call(url, 'POST', '/reactors', {
      key: ownerKey,
      body: {
        name: 'greeting',
        configuration: { greeting: 'first' },
        formula: { id: (formula.body as { id: string }).id },
      },
    });
    expect(reactor.status, JSON.stringify(reactor.body)).toBe(201);
    const path = `/reactors/${(reactor.body as { id: string }).id}/react`;
    const runs = async (count: number) => {
      const answers: Answer[] = [];
      for (let i = 0; i < count; i++)
        answers.push(await call(url, 'POST', path, { key: ownerKey, body: {} }));
      return answers;
    };
    // Both processes run it, and keep it in their reactor cache (REACTOR_CACHE_TTL_MS: a minute).
    const takenBefore = await requestsTakenByProcess(url);
    expect(await runs(4)).toEqual(Array(4).fill({ status: 200, body: { raw: 'first' } }));
    const takenAfter = await requestsTakenByProcess(url);
    for (const process of ['1', '2'])
      expect(takenAfter.get(process)! - (takenBefore.get(process) ?? 0)).toBeGreaterThanOrEqual(2);
    const updated = await call(url, 'PUT', `/reactors/${(reactor.body as { id: string }).id}`, {
      key: ownerKey,
      body: { name: 'greeting', configuration: { greeting: 'second' } },
    });
    expect(updated.status, JSON.stringify(updated.body)).toBe(200);
    expect(await runs(4)).toEqual(Array(4).fill({ status: 200, body: { raw: 'second' } }));
  }, 120_000);

  it('replaces a killed HTTP process, not ready meanwhile, and keeps answering', async () => {
    const { service, url, ownerKey } = running;
    const pids = running.listeningPids();
    expect(pids).toHaveLength(2);
    process.kill(pids[0]!, 'SIGKILL');
    const exitedLine = () => service.output.find((line) => line.includes('HTTP process exited'));
    await eventually(async () => expect(exitedLine()).toBeDefined());
    expect(JSON.parse(exitedLine()!)).toMatchObject({
      level: 40,
      msg: 'HTTP process exited; restarting it',
      exitedPid: pids[0],
      signal: 'SIGKILL',
    });
    // The other process answers everything while its sibling starts again, and says it is not ready.
    expect(await call(url, 'GET', '/readyz')).toMatchObject({
      status: 503,
      body: {
        checks: { processes: 'unavailable' },
        problems: ['HTTP_PROCESSES: 1 of 2 HTTP processes are up'],
      },
    });
    expect(await statusesOf(url, 10, '/tokens/no-such-token', ownerKey)).toEqual(Array(10).fill(404));
    await eventually(async () => expect(running.listeningPids()).toHaveLength(3), 120_000);
    expect(running.listeningPids()[2]).not.toBe(pids[0]);
    await eventually(async () => expect((await call(url, 'GET', '/readyz')).status).toBe(200));
    const takenBefore = await requestsTakenByProcess(url);
    await statusesOf(url, 10, '/healthz');
    const takenAfter = await requestsTakenByProcess(url);
    for (const process of ['1', '2'])
      expect(takenAfter.get(process)! - (takenBefore.get(process) ?? 0)).toBeGreaterThanOrEqual(3);
  }, 180_000);

  it('ends every process on SIGTERM: the primary stops each HTTP process, then itself, exit code 0', async () => {
    const { service } = running;
    const pids = running.listeningPids().slice(1);
    await service.stop();
    expect(service.child.exitCode).toBe(0);
    expect(service.output.filter((line) => line.includes('HTTP process stopping'))).toEqual(
      Array(2).fill('HTTP process stopping: asked by the primary process; shutting down'),
    );
    for (const pid of pids) expect(() => process.kill(pid, 0)).toThrow(/ESRCH/);
    expect(service.output.filter((line) => line.includes('HTTP process exited'))).toHaveLength(1);
  });
});
