// Load and measurement helpers: an autocannon run against one HTTP scenario, the warm-up +
// measured pair that makes one report row, and percentiles for the rows measured by hand.
import autocannon from 'autocannon';
import { startProfile } from './cpu-profile.ts';
import { log } from './log.ts';
import { openCostWindow, type CostProbe } from './request-cost.ts';
import type { Row } from './report.ts';
import { settings } from './settings.ts';

export interface HttpScenario {
  name: string;
  url: string;
  method: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  /** Called for every request: lets GET scenarios cycle through existing ids. */
  nextPath?: () => string;
  onResponse?: (status: number, body: string, headers: Record<string, unknown>) => void;
}

async function loadHttp(
  scenario: HttpScenario,
  seconds: number,
  connections = settings.connections,
): Promise<autocannon.Result> {
  const { nextPath, onResponse } = scenario;
  return autocannon({
    url: scenario.url,
    connections,
    duration: seconds,
    requests: [
      {
        method: scenario.method,
        headers: { 'content-type': 'application/json', ...scenario.headers },
        ...(scenario.body ? { body: scenario.body } : {}),
        ...(nextPath
          ? { setupRequest: (request: autocannon.Request) => ({ ...request, path: nextPath() }) }
          : {}),
        ...(onResponse
          ? {
              onResponse: (
                status: number,
                body: string,
                _context: object,
                headers?: Record<string, unknown>,
              ) => onResponse(status, body, headers ?? {}),
            }
          : {}),
      },
    ],
  });
}

export interface MeasureOptions {
  /** Extra text for the notes column, computed after the measured run. */
  note?: () => string;
  /** Where to measure what one request costs (CPU, statements, rows, transactions): the row's cost. */
  cost?: CostProbe;
  /** Called between the warm-up and the measured run (reset counters). */
  beforeMeasured?: () => void;
  /** Shorter runs for the read-model query scenarios: [warm-up, measured] seconds. */
  seconds?: [number, number];
  /** Overrides the connection count (latency scenarios run below saturation). */
  connections?: number;
}

/** Wall-clock bounds of a measured run, ms since the epoch. */
export interface TimeWindow {
  fromMs: number;
  toMs: number;
}

export interface Measured {
  row: Row;
  window: TimeWindow;
}

/** A short discarded run first (JIT, pools, caches), then the measured one at the same settings. */
export async function measureHttp(scenario: HttpScenario, options: MeasureOptions = {}): Promise<Measured> {
  const [warmupS, durationS] = options.seconds ?? [settings.warmupS, settings.durationS];
  const connections = options.connections ?? settings.connections;
  log(`${scenario.name}: ${warmupS} s warm-up, ${durationS} s measured, ${connections} connections`);
  await loadHttp(scenario, warmupS, connections);
  const costWindow = options.cost && (await openCostWindow(options.cost, Date.now()));
  options.beforeMeasured?.();
  const stopProfile = await startProfile(scenario.url, scenario.name);
  const fromMs = Date.now();
  const result = await loadHttp(scenario, durationS, connections);
  const toMs = Date.now();
  await stopProfile();
  const completed = result['2xx'] + result.non2xx;
  const note = options.note?.() ?? '';
  const cost = await costWindow?.close(completed, toMs);
  return {
    row: {
      scenario: scenario.name,
      // Completed responses over the real elapsed time (autocannon's duration is in seconds).
      rate: completed / result.duration,
      p50Ms: result.latency.p50,
      p99Ms: result.latency.p99,
      failures: result.non2xx,
      errors: result.errors + result.timeouts,
      note,
      ...(cost ? { cost } : {}),
    },
    window: { fromMs, toMs },
  };
}

/** Nearest-rank percentile of ascending values. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] ?? Number.NaN;
}
