import { reactorRunDuration, reactorRunsTotal } from '@tokenvault/platform';
import { outcomeName } from './run-problems.ts';
import type { CodeRunOutcome } from './run-request.ts';

/**
 * Counts a run by its outcome and times it (from `started`, `process.hrtime.bigint()`): the code's
 * error by its name (an SDK class, or a problem's slug); a run that could not be carried out at
 * all (no outcome) as `infrastructure`.
 */
export function recordRun(outcome: CodeRunOutcome | undefined, started: bigint): void {
  const label = !outcome ? 'infrastructure' : outcome.ok ? 'ok' : outcomeName(outcome.problem);
  reactorRunsTotal.inc({ outcome: label });
  reactorRunDuration.observe(
    { result: label === 'ok' ? 'ok' : 'error' },
    Number(process.hrtime.bigint() - started) / 1e9,
  );
}
