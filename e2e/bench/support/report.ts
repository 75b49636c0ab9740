// The markdown report on stdout: the machine, the table of rows, and the targets met or missed.
import { formatTopFrames, type ProfileSummary } from './cpu-profile.ts';
import os from 'node:os';
import pg from 'pg';
import { ownsPostgresServer } from './postgres-server.ts';
import type { RequestCost } from './request-cost.ts';
import { settings } from './settings.ts';

export interface Row {
  scenario: string;
  /** Requests (or appends) per second; null for rows that are not a rate. */
  rate: number | null;
  p50Ms: number;
  p99Ms: number;
  /** Non-2xx responses (HTTP) or failed appends; must be 0. */
  failures: number;
  /** Connection errors and timeouts. */
  errors: number;
  note: string;
  /** What one request cost (measureHttp's `cost` option). */
  cost?: RequestCost;
}

export interface Target {
  name: string;
  measured: string;
  goal: string;
  met: boolean;
}

const fmt = (value: number | null, digits = 1) =>
  value === null || Number.isNaN(value) ? '–' : value.toFixed(digits);

/** `row`'s rate at least `percent`% of `baseline`'s. */
export function rateRatioTarget(name: string, row: Row, baseline: Row, percent: number): Target {
  const ratio = (row.rate ?? 0) / (baseline.rate ?? 0);
  return {
    name,
    measured: `${(ratio * 100).toFixed(0)}%`,
    goal: `≥ ${percent}%`,
    met: ratio >= percent / 100,
  };
}

/** `row`'s p99 below `limitMs`. */
export function p99Target(row: Row, limitMs: number, name = `${row.scenario} p99`): Target {
  return {
    name,
    measured: `${fmt(row.p99Ms)} ms`,
    goal: `< ${limitMs} ms`,
    met: row.p99Ms < limitMs,
  };
}

/** Non-2xx responses, failed operations and errors over all rows: the run is valid only at 0. */
export function failureCount(rows: Row[]): number {
  return rows.reduce((sum, row) => sum + row.failures + row.errors, 0);
}

function table(rows: Row[]): string {
  const lines = [
    '| scenario | req/s | p50 ms | p99 ms | non-2xx / failed | errors | notes |',
    '| --- | ---: | ---: | ---: | ---: | ---: | --- |',
  ];
  for (const row of rows) {
    lines.push(
      `| ${row.scenario} | ${fmt(row.rate, 0)} | ${fmt(row.p50Ms)} | ${fmt(row.p99Ms)} | ${row.failures} | ${row.errors} | ${row.note} |`,
    );
  }
  return lines.join('\n');
}

function targetsTable(targets: Target[]): string {
  const lines = ['| target | measured | goal | result |', '| --- | ---: | ---: | --- |'];
  for (const target of targets) {
    lines.push(
      `| ${target.name} | ${target.measured} | ${target.goal} | ${target.met ? 'met' : '**missed**'} |`,
    );
  }
  return lines.join('\n');
}

const totalCpuMs = (cost: RequestCost) => cost.serviceCpuMs + (cost.postgresCpuMs ?? Number.NaN);

/** `value` ÷ `base` as "×n.n", or – without a base. */
const times = (value: number | null, base: number | null | undefined) =>
  value === null || base === null || base === undefined ? '–' : `×${(value / base).toFixed(1)}`;

/** The rows measured with their cost, each beside its baseline (req/s as a share, CPU as a multiple). */
function costTable(rows: Row[]): string {
  const measured = rows.filter((row) => row.cost !== undefined);
  if (measured.length === 0) return '';
  const lines = [
    '### CPU per request',
    '',
    "Per answered request, the asynchronous processors' work for it included (support/request-cost.ts). Statements: sent by the clients (+ run in functions and triggers); rows: returned or affected by them all; rows written: inserted, updated or deleted.",
    '',
    '| scenario | projections | req/s | req/s vs baseline | service CPU ms | PostgreSQL CPU ms | total CPU ms | total vs baseline | statements | rows | rows written | transactions |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const row of measured) {
    const cost = row.cost!;
    const baseline = measured.find((other) => other.scenario === cost.baseline);
    const rateShare =
      baseline && row.rate !== null && baseline.rate
        ? `${((row.rate / baseline.rate) * 100).toFixed(0)}%`
        : '–';
    const statements =
      cost.statements === null
        ? '–'
        : `${fmt(cost.statements)}${cost.nestedStatements ? ` (+${fmt(cost.nestedStatements)})` : ''}`;
    lines.push(
      `| ${row.scenario}${cost.settled ? '' : ' (processors still behind 60 s after the load)'} | ${cost.projections ?? '–'} | ${fmt(row.rate, 0)} | ${rateShare} | ${fmt(cost.serviceCpuMs, 2)} | ${fmt(cost.postgresCpuMs, 2)} | ${fmt(totalCpuMs(cost), 2)} | ${baseline ? times(totalCpuMs(cost), totalCpuMs(baseline.cost!)) : '–'} | ${statements} | ${fmt(cost.rows)} | ${fmt(cost.rowsWritten)} | ${fmt(cost.transactions, 2)} |`,
    );
  }
  return lines.join('\n');
}

const markdownCell = (text: string) => text.replaceAll('|', '\\|').replaceAll('`', "'");

/** For each row with a cost: the rows it wrote by table, and its top statements by total time. */
function statementDetails(rows: Row[]): string {
  const measured = rows.filter((row) => row.cost !== undefined);
  if (measured.length === 0) return '';
  const sections = measured.map((row) => {
    const cost = row.cost!;
    const written =
      cost.writtenByTable.map((entry) => `${entry.table} ${fmt(entry.rows, 2)}`).join(', ') || 'none';
    const lines = [
      `**${row.scenario}**${cost.projections ? ` (${cost.projections})` : ''}: rows written per request: ${written}.`,
    ];
    if (cost.topStatements && cost.topStatements.length > 0) {
      lines.push(
        '',
        '| statement | calls per request | ms per call |',
        '| --- | ---: | ---: |',
        ...cost.topStatements.map(
          (statement) =>
            `| ${statement.nested ? '(nested) ' : ''}\`${markdownCell(statement.query)}\` | ${fmt(statement.callsPerRequest, 2)} | ${fmt(statement.msPerCall, 3)} |`,
        ),
      );
    }
    return lines.join('\n');
  });
  return ['### Top statements by total time, and rows written', '', sections.join('\n\n')].join('\n');
}

/** The machine, the software and the settings, as the report's opening list. */
export async function machineInfo(adminUrl: string): Promise<string> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  const version = await client
    .query<{ server_version: string }>('SHOW server_version')
    .finally(() => client.end());
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  const load = os
    .loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');
  return [
    `- nproc: ${os.availableParallelism()} (${cpu}), memory ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, load average at start ${load}`,
    `- node ${process.version}, PostgreSQL ${version.rows[0]?.server_version ?? '?'} (${ownsPostgresServer() ? "the bench's own cluster, see support/postgres-server.ts" : 'BENCH_POSTGRES_URL'}), ${os.type()} ${os.release()}`,
    `- ${settings.connections} connections, ${settings.warmupS} s warm-up + ${settings.durationS} s per scenario, DATABASE_POOL_SIZE=${settings.poolSize}`,
  ].join('\n');
}

/** The whole report, rows in the order given. */
export function renderReport(info: string, rows: Row[], targets: Target[]): string {
  const failures = failureCount(rows);
  return [
    '',
    `## Benchmark ${new Date().toISOString()}`,
    '',
    info,
    '',
    table(rows),
    '',
    ...[costTable(rows), statementDetails(rows)].filter(Boolean).flatMap((section) => [section, '']),
    targetsTable(targets),
    '',
    failures === 0
      ? 'All requests succeeded (0 non-2xx, 0 errors).'
      : `**${failures} failed requests: the run is not valid.**`,
    '',
  ].join('\n');
}

/** The top frames of each measured run's CPU profile (BENCH_CPU_PROFILE_DIR), as markdown. */
export function renderProfiles(profiles: readonly ProfileSummary[]): string {
  if (profiles.length === 0) return '';
  return [
    '',
    '### CPU profiles (self time, share of all samples)',
    '',
    ...profiles.flatMap((profile) => [
      `- **${profile.row}** (${profile.process}, main thread busy ${profile.busyPercent.toFixed(0)}%, \`${profile.file}\`): ${formatTopFrames(profile)}`,
    ]),
    '',
  ].join('\n');
}
