// The whole test suite: static checks first (fast failures), then every tier of vitest with the
// default projections (inline), then the e2e tier again with PROJECTIONS=async (every read model
// written by the projector, as with an event store outside PostgreSQL), then one plain closing
// line with the counts of both runs.
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const run = (command, args, env = process.env) => execFileSync(command, args, { stdio: 'inherit', env });
run('npx', ['tsc', '-p', 'tsconfig.json', '--noEmit']);
// The console's page script: the DOM library, apart from the Node program.
run('npx', ['tsc', '-p', 'packages/console/app/tsconfig.json']);
run('npx', ['eslint', '.']);
run('npx', ['prettier', '--check', '.']);
run(process.execPath, ['scripts/openapi-lint.mjs']);

/** One vitest run; its counts (a file that failed outside any test counts as one failure). */
function vitest(name, args, env) {
  const report = `.data/vitest-report-${name}.json`;
  let failed = false;
  try {
    run(
      'npx',
      ['vitest', 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`, ...args],
      {
        ...process.env,
        ...env,
      },
    );
  } catch {
    failed = true;
  }
  const results = JSON.parse(readFileSync(report, 'utf8'));
  const failedFiles = results.testResults.filter(
    (file) => file.status === 'failed' && !file.assertionResults.some((test) => test.status === 'failed'),
  ).length;
  const failures = results.numFailedTests + failedFiles;
  // A run that failed without a failed test (an error outside every test, a worker that died)
  // still counts as a failure in the closing line.
  return { failed, passed: results.numPassedTests, failures: failed && failures === 0 ? 1 : failures };
}

const extra = process.argv.slice(2);
const runs = [vitest('inline', extra, { PROJECTIONS: 'inline' })];
// Only when the whole suite runs (arguments pick files or tiers: run those once).
if (extra.length === 0) runs.push(vitest('async', ['--project', 'e2e'], { PROJECTIONS: 'async' }));
// Last, the compose tier (e2e/compose): the docker-compose stack in containers. It installs and
// starts Docker itself, which takes root (or an engine the user may already use).
if (extra.length === 0) {
  const dockerAnswers = spawnSync('docker', ['info'], { stdio: 'ignore' }).status === 0;
  if (process.getuid?.() === 0 || dockerAnswers)
    runs.push(vitest('compose', ['--config', 'vitest.compose.config.ts'], {}));
  else console.log('\ncompose tier: did not run (not root, and no Docker engine answers to install or use)');
}
const passed = runs.reduce((sum, result) => sum + result.passed, 0);
const failures = runs.reduce((sum, result) => sum + result.failures, 0);
console.log(`\nvitest: ${passed} passed, ${failures} failed`);
if (runs.some((result) => result.failed) || failures > 0 || passed === 0) process.exit(1);
