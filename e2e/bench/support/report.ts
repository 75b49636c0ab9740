// The markdown report on stdout: the machine, the table of rows, and the targets met or missed.
import { formatTopFrames, type ProfileSummary } from './cpu-profile.ts';
import os from 'node:os';
import pg from 'pg';
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
    `- node ${process.version}, PostgreSQL ${version.rows[0]?.server_version ?? '?'}, ${os.type()} ${os.release()}`,
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
