import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { isDeepStrictEqual, promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readModelLagHeader } from '@tokenvault/cqrs';
import { createTestDatabase, type TestDatabase } from '@tokenvault/platform/testing';
import { allMigrations } from '@tokenvault/runtime';
import { obliterateQueues } from '@tokenvault/jobs';

const run = promisify(execFile);
const root = new URL('..', import.meta.url).pathname;
const projections = process.env.PROJECTIONS === 'async' ? 'async' : 'inline';

/** The bounds of the write load: loops at once, requests per loop, time before the kill. */
const loops = 8;
const requestsPerLoop = 400;
const loadMs = 1_500;
const requestTimeoutMs = 15_000;
const startTimeoutMs = 30_000;

/** Read models the crash must leave equal to a rebuild from the events. */
const inlineTables = [
  'tenants',
  'users',
  'tenant_members',
  'tenant_invitations',
  'applications',
  'api_keys',
  'tokens',
  'token_associations',
  'reactor_formulas',
  'reactors',
];
const trailingTables = ['audit_logs', 'token_type_usage', 'token_monthly_activity', 'token_monthly_usage'];

interface Service {
  url: string;
  child: ChildProcess;
  exited: Promise<void>;
  /** The last lines it wrote (stdout and stderr), for failure messages. */
  output: string[];
}

const started = new Set<Service>();

/** Whether a process is there and not a zombie (Linux /proc; elsewhere, signal 0). */
function isRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    if (existsSync('/proc/self/stat')) return false;
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The processes a process forked (the reactor sandbox), and theirs: Linux /proc, else none. */
function descendants(pid: number): number[] {
  const children: number[] = [];
  try {
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      const listed = readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8');
      children.push(...listed.split(' ').filter(Boolean).map(Number));
    }
  } catch {
    return [];
  }
  return children.flatMap((child) => [child, ...descendants(child)]);
}

/** Waits up to `ms` for the processes to end; SIGKILLs the ones still there and names them. */
async function leftovers(pids: number[], ms = 5_000): Promise<number[]> {
  const deadline = Date.now() + ms;
  while (pids.some(isRunning) && Date.now() < deadline) await sleep(50);
  const left = pids.filter(isRunning);
  for (const pid of left) process.kill(pid, 'SIGKILL');
  return left;
}

/**
 * `node services/all-in-one/src/main.ts`, as `npm start` runs it; resolves with its URL once it
 * logs that it listens (PORT=0: that log line gives the port), fails with its output otherwise.
 */
async function startService(env: NodeJS.ProcessEnv): Promise<Service> {
  const child = spawn(process.execPath, ['services/all-in-one/src/main.ts'], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const service: Service = { url: '', child, exited, output };
  started.add(service);
  const keep = (line: string) => {
    output.push(line);
    if (output.length > 200) output.shift();
  };
  const tail = () => output.slice(-40).join('\n');
  service.url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () =>
        reject(
          new Error(
            `the service did not log "tokenvault is listening" within ${startTimeoutMs} ms:\n${tail()}`,
          ),
        ),
      startTimeoutMs,
    );
    let partial = '';
    child.stdout.on('data', (chunk: Buffer) => {
      const lines = (partial + chunk.toString('utf8')).split('\n');
      partial = lines.pop()!;
      for (const line of lines) {
        keep(line);
        if (!line.includes('tokenvault is listening')) continue;
        const { url } = JSON.parse(line) as { url?: string };
        if (url) {
          clearTimeout(timer);
          resolve(url);
        }
      }
    });
    let partialError = '';
    child.stderr.on('data', (chunk: Buffer) => {
      const lines = (partialError + chunk.toString('utf8')).split('\n');
      partialError = lines.pop()!;
      lines.forEach(keep);
    });
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`the service could not be started: ${error.message}`));
    });
    // After its output is read to the end (a configuration error is on stderr).
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`the service exited (${signal ?? `code ${code}`}) before it listened:\n${tail()}`));
    });
  });
  return service;
}

const exitedAlready = (child: ChildProcess) => child.exitCode !== null || child.signalCode !== null;

/** SIGTERM, SIGKILL if it has not exited after `graceMs`; then any process it left behind. */
async function stopService(service: Service, graceMs = 10_000): Promise<void> {
  const forked = descendants(service.child.pid!);
  if (!exitedAlready(service.child)) {
    service.child.kill('SIGTERM');
    await Promise.race([service.exited, sleep(graceMs)]);
  }
  if (!exitedAlready(service.child)) service.child.kill('SIGKILL');
  await service.exited;
  await leftovers(forked);
  started.delete(service);
}

/**
 * kill -9 of the service: no shutdown, in-flight requests and transactions cut off. Resolves with
 * the processes it had forked that did not end with it (killed now).
 */
async function crash(service: Service): Promise<number[]> {
  const forked = descendants(service.child.pid!);
  service.child.kill('SIGKILL');
  await service.exited;
  started.delete(service);
  return leftovers(forked);
}

type TokenType = 'token' | 'card';
interface TokenState {
  type: TokenType;
  data: unknown;
  metadata: Record<string, string>;
  /** The last acknowledged response's token (no data): what a read gives back, with the data. */
  body?: Record<string, unknown>;
}
/** What the service must hold for a token id: a token, or nothing (never created, or deleted). */
type Outcome = TokenState | 'absent';
interface Tracked {
  /** As of the last acknowledged write. */
  acked: Outcome;
  /** A write sent and not answered when the service died: it may or may not have committed. */
  pending?: Outcome;
  /** An acknowledged write whose response said the read models lagged (async mode). */
  lagging: boolean;
}

describe(`kill -9 under a write load (PROJECTIONS=${projections})`, () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let env: NodeJS.ProcessEnv;
  let apiKey: string;
  let tenantId: string;

  beforeAll(async () => {
    database = await createTestDatabase(allMigrations);
    pool = new pg.Pool({ connectionString: database.url, max: 2 });
    const { KAFKA_BROKERS: _kafka, ...inherited } = process.env;
    env = {
      ...inherited,
      NODE_ENV: 'test',
      DATABASE_URL: database.url,
      PORT: '0',
      HOST: '127.0.0.1',
      MASTER_KEY: randomBytes(32).toString('base64'),
      LOG_LEVEL: 'info',
      QUEUE_PREFIX: `tv-test-${database.name}`,
      PROJECTIONS: projections,
      RATE_LIMIT_PER_MINUTE: '0',
    };
    const { stdout, stderr } = await run(
      process.execPath,
      [
        'services/admin-cli/src/bootstrap.ts',
        '--tenant-name',
        'Crash',
        '--owner-email',
        `owner-${randomBytes(4).toString('hex')}@example.com`,
      ],
      { cwd: root, env: { ...env, LOG_LEVEL: 'warn' }, timeout: 60_000 },
    );
    // Its one JSON line with the key (any log line printed with it is not that line).
    const bootstrapped = stdout
      .split('\n')
      .map((line) => {
        try {
          return JSON.parse(line) as { api_key?: string; tenant_id?: string };
        } catch {
          return undefined;
        }
      })
      .find((output) => output?.api_key && output.tenant_id);
    if (!bootstrapped) throw new Error(`the bootstrap CLI printed no key:\n${stdout}\n${stderr}`);
    apiKey = bootstrapped.api_key!;
    tenantId = bootstrapped.tenant_id!;
  });

  afterAll(async () => {
    for (const service of [...started]) await stopService(service);
    await pool?.end();
    if (env)
      await obliterateQueues({
        REDIS_URL: env.REDIS_URL ?? 'redis://127.0.0.1:6379',
        QUEUE_PREFIX: env.QUEUE_PREFIX!,
      }).catch(() => {});
    await database?.drop();
  });

  const request = (url: string, method: string, path: string, body?: unknown) =>
    fetch(`${url}${path}`, {
      method,
      headers: {
        'svc-api-key': apiKey,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(requestTimeoutMs),
    });

  /** Until the projector's checkpoint has passed every event committed so far. */
  async function projectorCaughtUp(timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const { rows } = await pool.query<{ behind: number; checkpoint: string | null }>(
        `SELECT (SELECT count(*)::int FROM es_events e
                 WHERE (e.transaction_id, e.global_position) > (c.commit_position, c.prepare_position)) AS behind,
                c.commit_position::text AS checkpoint
         FROM (SELECT 1) one LEFT JOIN projection_checkpoints c ON c.name = 'read-models'`,
      );
      const { behind, checkpoint } = rows[0]!;
      if (checkpoint !== null && behind === 0) return;
      if (Date.now() > deadline) {
        throw new Error(
          `the projector's 'read-models' checkpoint did not pass the head of es_events within ${timeoutMs} ms ` +
            `(${checkpoint === null ? 'no checkpoint row' : `${behind} events behind`})`,
        );
      }
      await sleep(50);
    }
  }

  /** Every row of each table, all columns, in a stable order. */
  async function snapshot(tables: string[]): Promise<Record<string, string[]>> {
    const result: Record<string, string[]> = {};
    for (const table of tables) {
      const { rows } = await pool.query<{ row: string }>(
        `SELECT to_jsonb(t)::text AS row FROM ${table} t ORDER BY 1`,
      );
      result[table] = rows.map((row) => row.row);
    }
    return result;
  }

  it('keeps every acknowledged write; the read models equal a rebuild and the projector catches up exactly', async () => {
    const first = await startService(env);
    const ready = await request(first.url, 'GET', '/tenants/self');
    expect(ready.status, `the bootstrapped key works: ${await ready.text()}`).toBe(200);

    // The load: each loop writes only its own tokens, one request at a time, so at most one of a
    // token's writes is unanswered when the service dies.
    const tracked = new Map<string, Tracked>();
    const associations = new Set<string>();
    const unexpected: string[] = [];
    let acknowledged = 0;
    let inFlight = 0;
    let stop = false;

    const send = async (
      id: string,
      outcome: Outcome,
      method: string,
      path: string,
      body?: unknown,
    ): Promise<boolean> => {
      const token: Tracked = tracked.get(id) ?? { acked: 'absent', lagging: false };
      tracked.set(id, token);
      token.pending = outcome;
      inFlight++;
      let response: Response;
      try {
        response = await request(first.url, method, path, body);
      } catch {
        // Cut off by the kill (or timed out): its outcome stays unknown.
        return false;
      } finally {
        inFlight--;
      }
      const text = await response.text().catch(() => undefined);
      if (text === undefined) return false;
      if (response.status < 200 || response.status > 299) {
        unexpected.push(`${method} ${path}: ${response.status} ${text.slice(0, 300)}`);
        token.pending = undefined;
        return false;
      }
      if (outcome !== 'absent' && text) outcome.body = JSON.parse(text) as Record<string, unknown>;
      token.acked = outcome;
      token.pending = undefined;
      token.lagging = response.headers.get(readModelLagHeader) !== null;
      acknowledged++;
      return true;
    };

    const loop = async (index: number) => {
      const live: string[] = [];
      const pick = () => live[Math.floor(Math.random() * live.length)]!;
      for (let n = 0; n < requestsPerLoop && !stop; n++) {
        const id = `crash-${index}-${n}`;
        const step = n % 6;
        if (step === 3 && live.length > 0) {
          // A child, created under a parent in one event.
          const parent = pick();
          const state: TokenState = { type: 'token', data: `${id} child`, metadata: { loop: `${index}` } };
          const body = { id, data: state.data, metadata: state.metadata };
          if (!(await send(id, state, 'POST', `/tokens/${parent}/children`, body))) return;
          live.push(id);
          associations.add(`${parent} ${id}`);
        } else if (step === 4 && live.length > 0) {
          const target = pick();
          const before = tracked.get(target)!.acked as TokenState;
          // Cards keep their data (it has a shape); a patch changes the metadata of both.
          const patch =
            before.type === 'token'
              ? { data: `${target} v${n}`, metadata: { v: `${n}` } }
              : { metadata: { v: `${n}` } };
          // Not the acknowledged response's fields: only this write's answer would say what they are.
          const state: TokenState = {
            type: before.type,
            data: 'data' in patch ? patch.data : before.data,
            metadata: { ...before.metadata, ...patch.metadata },
          };
          if (!(await send(target, state, 'PATCH', `/tokens/${target}`, patch))) return;
        } else if (step === 5 && live.length > 2) {
          const target = pick();
          if (!(await send(target, 'absent', 'DELETE', `/tokens/${target}`))) return;
          live.splice(live.indexOf(target), 1);
          for (const pair of [...associations]) {
            if (pair.split(' ').includes(target)) associations.delete(pair);
          }
        } else {
          const state: TokenState =
            n % 4 === 2
              ? {
                  type: 'card',
                  data: {
                    number: '4242424242424242',
                    expiration_month: (n % 12) + 1,
                    expiration_year: 2030 + index,
                  },
                  metadata: { loop: `${index}` },
                }
              : { type: 'token', data: `${id} v0`, metadata: { loop: `${index}` } };
          const body = { id, type: state.type, data: state.data, metadata: state.metadata };
          if (!(await send(id, state, 'POST', '/tokens', body))) return;
          live.push(id);
        }
      }
    };

    const loadStarted = Date.now();
    const running = Promise.all(Array.from({ length: loops }, (_, index) => loop(index)));
    let loopsDone = false;
    void running.then(() => (loopsDone = true));
    while (Date.now() - loadStarted < loadMs && !loopsDone) await sleep(5);
    const inFlightAtKill = inFlight;
    stop = true;
    const orphans = await crash(first);
    await running;
    const loadTook = Date.now() - loadStarted;

    expect(unexpected, 'every answered write was a 2xx').toEqual([]);
    expect(orphans, 'processes the killed service had forked ended with it').toEqual([]);
    expect(inFlightAtKill, 'requests were in flight when the service was killed').toBeGreaterThan(0);
    expect(acknowledged, 'the load got writes acknowledged before the kill').toBeGreaterThan(loops);
    expect(loadTook, 'the load stopped with the kill').toBeLessThan(loadMs + requestTimeoutMs);

    const second = await startService(env);
    const url = second.url;

    /** Undefined when GET /tokens/{id} gives back one of the outcomes, else what differs. */
    const check = async (id: string, outcomes: Outcome[]): Promise<string | undefined> => {
      const response = await request(url, 'GET', `/tokens/${id}`);
      const text = await response.text();
      const found = response.status === 200 ? (JSON.parse(text) as Record<string, unknown>) : undefined;
      const differences = outcomes.map((outcome) => {
        if (outcome === 'absent')
          return response.status === 404 ? [] : [`status ${response.status}, not 404`];
        if (!found) return [`status ${response.status}, not 200`];
        // The acknowledged response's fields, and the data written.
        const expected = {
          ...outcome.body,
          id,
          type: outcome.type,
          data: outcome.data,
          metadata: outcome.metadata,
        };
        return Object.entries(expected)
          .filter(([key, value]) => !isDeepStrictEqual(found[key], value))
          .map(([key, value]) => `${key} ${JSON.stringify(found[key])}, not ${JSON.stringify(value)}`);
      });
      if (differences.some((difference) => difference.length === 0)) return undefined;
      return `${id}: ${differences.map((difference) => difference.join(', ')).join(' / nor ')}`;
    };

    // Acknowledged writes answer at once after the restart (with PROJECTIONS=async too: the 2xx
    // waited for the projector's commit, unless it said that the read models lagged).
    const certain = [...tracked].filter(([, token]) => token.pending === undefined && !token.lagging);
    const mismatches: string[] = [];
    for (const [id, token] of certain) {
      const mismatch = await check(id, [token.acked]);
      if (mismatch) mismatches.push(mismatch);
    }
    expect(mismatches, 'acknowledged writes read back after the restart').toEqual([]);

    // A write cut off by the kill either happened entirely or not at all, once the projector caught up.
    await projectorCaughtUp();
    const uncertain = [...tracked].filter(([, token]) => token.pending !== undefined || token.lagging);
    for (const [id, token] of uncertain) {
      const mismatch = await check(
        id,
        token.pending === undefined ? [token.acked] : [token.acked, token.pending],
      );
      if (mismatch) mismatches.push(mismatch);
    }
    expect(mismatches, 'writes cut off by the kill: all or nothing').toEqual([]);

    // No token the load did not write; every acknowledged association whose tokens are certain.
    const { rows: tokenRows } = await pool.query<{ id: string }>(
      'SELECT id FROM tokens WHERE tenant_id = $1',
      [tenantId],
    );
    expect(tokenRows.map((row) => row.id).filter((id) => !tracked.has(id))).toEqual([]);
    const { rows: associationRows } = await pool.query<{ pair: string }>(
      `SELECT parent_id || ' ' || child_id AS pair FROM token_associations WHERE tenant_id = $1`,
      [tenantId],
    );
    const stored = new Set(associationRows.map((row) => row.pair));
    const isCertain = (id: string) => tracked.get(id)?.pending === undefined;
    expect(
      [...associations].filter((pair) => pair.split(' ').every(isCertain) && !stored.has(pair)),
      'acknowledged associations are there',
    ).toEqual([]);

    // The trailing read models (every read model with PROJECTIONS=async) catch up exactly: one log
    // row per event of the tenant, and usage counting each live token once.
    await projectorCaughtUp();
    // Its reads are in batches of reads, whose metadata names no tenant: a row per token read.
    const { rows: events } = await pool.query<{ event_id: string }>(
      `SELECT event_id FROM (
         SELECT event_id::text FROM es_events WHERE metadata->>'tenant_id' = $1
         UNION ALL
         SELECT event_id::text
           FROM es_events, jsonb_array_elements(data->'reads') AS read, jsonb_array_elements(read->'tokens')
          WHERE event_type = 'TokensReadBatch' AND read->>'tenant_id' = $1) AS rows
       ORDER BY 1`,
      [tenantId],
    );
    const { rows: logs } = await pool.query<{ event_id: string }>(
      'SELECT event_id::text FROM audit_logs WHERE tenant_id = $1 ORDER BY 1',
      [tenantId],
    );
    expect
      .soft(
        logs.map((row) => row.event_id),
        'one audit row per event',
      )
      .toEqual(events.map((row) => row.event_id));
    const { rows: usage } = await pool.query<{ type: string; count: number }>(
      'SELECT type, count::int FROM token_type_usage WHERE tenant_id = $1 AND count <> 0 ORDER BY type',
      [tenantId],
    );
    const { rows: liveByType } = await pool.query<{ type: string; count: number }>(
      'SELECT type, count(*)::int AS count FROM tokens WHERE tenant_id = $1 GROUP BY type ORDER BY type',
      [tenantId],
    );
    expect.soft(usage, 'token_type_usage counts the live tokens').toEqual(liveByType);

    // Every read model equals a rebuild from the events.
    const before = await snapshot([...inlineTables, ...trailingTables]);
    const { stderr } = await run(process.execPath, ['services/admin-cli/src/rebuild-read-models.ts'], {
      cwd: root,
      env: { ...env, LOG_LEVEL: 'warn' },
      timeout: 60_000,
    });
    expect(stderr).toContain('read models rebuilt');
    const after = await snapshot([...inlineTables, ...trailingTables]);
    for (const table of [...inlineTables, ...trailingTables]) {
      expect.soft(before[table], `${table} after the crash equals its rebuild`).toEqual(after[table]);
    }

    await stopService(second);
    expect(second.child.signalCode ?? second.child.exitCode, 'the restarted service stops on SIGTERM').toBe(
      0,
    );
  });
});
