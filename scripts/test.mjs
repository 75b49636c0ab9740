// The test suite. With no tier, the whole of it: static checks first (fast failures), the
// architecture rules, then every tier of vitest with the default projections (inline), the e2e
// tier again with PROJECTIONS=async (every read model written by the projector, as with an event
// store outside PostgreSQL), the compose tier, then one plain closing line with the counts of all
// runs.
//
//   node scripts/test.mjs [--tier unit|int|e2e|compose] [vitest arguments…]
//
// With a tier, only that tier's vitest runs (e2e in both projection modes). Arguments after it
// (files, -t filters) go to vitest; with arguments, the e2e tier runs once, in the mode of the
// environment's PROJECTIONS (inline by default).
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const tiers = ['unit', 'int', 'e2e', 'compose'];
const args = process.argv.slice(2);
const tierAt = args.indexOf('--tier');
const tier = tierAt === -1 ? undefined : args[tierAt + 1];
if (tierAt !== -1 && !tiers.includes(tier)) {
  console.error(`--tier must be one of ${tiers.join(', ')}`);
  process.exit(2);
}
const extra = tierAt === -1 ? args : args.filter((_, index) => index !== tierAt && index !== tierAt + 1);

const run = (command, commandArgs, env = process.env) =>
  execFileSync(command, commandArgs, { stdio: 'inherit', env });

if (tier === undefined) {
  run('npx', ['tsc', '-p', 'tsconfig.json', '--noEmit']);
  // The console's page script: the DOM library, apart from the Node program.
  run('npx', ['tsc', '-p', 'packages/console/app/tsconfig.json']);
  run('npx', ['eslint', '.']);
  run('npx', ['prettier', '--check', '.']);
  run(process.execPath, ['scripts/openapi-lint.mjs']);
  run('npm', ['run', '--silent', 'check:architecture']);
}

/** One vitest run; its counts (a file that failed outside any test counts as one failure). */
function vitest(name, vitestArgs, env) {
  const report = `.data/vitest-report-${name}.json`;
  let failed = false;
  try {
    run(
      'npx',
      [
        'vitest',
        'run',
        '--reporter=default',
        '--reporter=json',
        `--outputFile.json=${report}`,
        ...vitestArgs,
      ],
      { ...process.env, ...env },
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

/** The compose tier: the docker-compose stack in containers; it installs and starts Docker itself, which takes root (or an engine the user may already use). */
function composeTier() {
  const dockerAnswers = spawnSync('docker', ['info'], { stdio: 'ignore' }).status === 0;
  if (process.getuid?.() === 0 || dockerAnswers)
    return [vitest('compose', ['--config', 'vitest.compose.config.ts', ...extra], {})];
  console.log('\ncompose tier: did not run (not root, and no Docker engine answers to install or use)');
  return [];
}

const mode = (projections) => ({ PROJECTIONS: projections });
const defaultMode = process.env.PROJECTIONS ?? 'inline';
const runs = [];
if (tier === undefined) {
  runs.push(vitest('inline', extra, mode('inline')));
  // Only when the whole suite runs (arguments pick files or tiers: run those once).
  if (extra.length === 0) {
    runs.push(vitest('async', ['--project', 'e2e'], mode('async')));
    runs.push(...composeTier());
  }
} else if (tier === 'compose') {
  runs.push(...composeTier());
} else if (tier === 'e2e' && extra.length === 0) {
  runs.push(vitest('e2e-inline', ['--project', 'e2e'], mode('inline')));
  runs.push(vitest('e2e-async', ['--project', 'e2e'], mode('async')));
} else {
  runs.push(vitest(tier, ['--project', tier, ...extra], mode(defaultMode)));
}
const passed = runs.reduce((sum, result) => sum + result.passed, 0);
const failures = runs.reduce((sum, result) => sum + result.failures, 0);
console.log(`\nvitest: ${passed} passed, ${failures} failed`);
if (runs.some((result) => result.failed) || failures > 0 || passed === 0) process.exit(1);
