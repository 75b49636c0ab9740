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
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { stripVTControlCharacters } from 'node:util';

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

/**
 * Runs vitest with a JSON report. Its output goes on to this process's as it comes, and is
 * searched for the unhandled errors that were a worker process exiting.
 */
async function runVitest(report, vitestArgs, env) {
  const child = spawn(
    'npx',
    ['vitest', 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`, ...vitestArgs],
    { stdio: ['inherit', 'pipe', 'pipe'], env: { ...process.env, ...env } },
  );
  let output = '';
  child.stdout.on('data', (chunk) => {
    process.stdout.write(chunk);
    output += chunk;
  });
  child.stderr.on('data', (chunk) => {
    process.stderr.write(chunk);
    output += chunk;
  });
  const [code] = await once(child, 'close');
  return {
    failed: code !== 0,
    results: JSON.parse(readFileSync(report, 'utf8')),
    unhandledErrors: Number(/Vitest caught (\d+) unhandled error/.exec(output)?.[1] ?? 0),
    workerExits: output.split('Worker exited unexpectedly').length - 1,
    // Vitest names, under "Unhandled Errors", the file an error came from when it knows it.
    unhandledErrorFiles: [
      ...new Set(
        Array.from(
          stripVTControlCharacters(output).matchAll(/This error originated in "([^"]+)" test file/g),
          (match) => match[1],
        ),
      ),
    ],
  };
}

/** The test files whose worker process exited in the middle, per run, for the closing lines. */
const workerExitNotes = [];
/** Each failed test (or file that failed outside its tests), per run, for the closing lines. */
const failureNotes = [];

/** The first line of a failure message, without colours, short enough for one line. */
const firstLine = (message = '') => {
  const [line] = stripVTControlCharacters(message).trim().split('\n');
  return line.length > 240 ? `${line.slice(0, 240)}…` : line;
};

/** Notes the failed tests of a vitest JSON report: CI may show only the end of the output. */
function noteFailures(name, results, skippedFiles = []) {
  for (const file of results.testResults) {
    const path = relative(process.cwd(), file.name);
    if (skippedFiles.includes(path)) continue;
    const failedTests = file.assertionResults.filter((test) => test.status === 'failed');
    for (const test of failedTests)
      failureNotes.push(`${name}: ${path} > ${test.fullName}: ${firstLine(test.failureMessages?.[0])}`);
    if (file.status === 'failed' && failedTests.length === 0)
      failureNotes.push(`${name}: ${path}: ${firstLine(file.message)}`);
  }
}

/**
 * One vitest run of `selection` (its project or config) and `filters` (files, -t); its counts (a
 * file that failed outside any test counts as one failure). When a file's worker process exits in
 * the middle, vitest leaves its tests pending and names neither the file nor a failed test: such
 * a file is named and run once more on its own. The run passes only when every unhandled error
 * was such an exit and each such file passes on its own; the closing lines name them either way.
 */
async function vitest(name, selection, filters, env) {
  const first = await runVitest(`.data/vitest-report-${name}.json`, [...selection, ...filters], env);
  const files = first.results.testResults;
  let failures =
    first.results.numFailedTests +
    files.filter(
      (file) => file.status === 'failed' && !file.assertionResults.some((test) => test.status === 'failed'),
    ).length;
  let passed = first.results.numPassedTests;
  let failed = first.failed;
  const cutShort = files.filter((file) => file.assertionResults.some((test) => test.status === 'pending'));
  const paths = cutShort.map((file) => relative(process.cwd(), file.name));
  noteFailures(name, first.results, paths);
  if (cutShort.length > 0) {
    console.log(
      `\nvitest (${name}): the worker running ${paths.join(', ')} exited before its tests ended; running it again on its own`,
    );
    const again = await runVitest(`.data/vitest-report-${name}-again.json`, [...selection, ...paths], env);
    const passedAgain = !again.failed && again.results.numPassedTests > 0;
    noteFailures(`${name}, run again`, again.results);
    // The tests of those files count once, as they ended when run on their own.
    passed +=
      again.results.numPassedTests -
      cutShort.flatMap((file) => file.assertionResults).filter((test) => test.status === 'passed').length;
    failures += again.results.numFailedTests || (passedAgain ? 0 : 1);
    if (passedAgain && failures === 0 && first.unhandledErrors === first.workerExits) failed = false;
    workerExitNotes.push(`${name}: ${paths.join(', ')} (${passedAgain ? 'passed' : 'failed'} on its own)`);
  }
  if (failed && failures === 0)
    failureNotes.push(
      `${name}: no test failed, yet vitest did: ${first.unhandledErrors} unhandled error(s)${first.unhandledErrorFiles.length > 0 ? ` from ${first.unhandledErrorFiles.join(', ')}` : ''} (see "Unhandled Errors" above)`,
    );
  // A run that failed without a failed test (an error outside every test) still counts as a
  // failure in the closing line.
  return { failed, passed, failures: failed && failures === 0 ? 1 : failures };
}

/** The compose tier: the docker-compose stack in containers; it installs and starts Docker itself, which takes root (or an engine the user may already use). */
async function composeTier() {
  const dockerAnswers = spawnSync('docker', ['info'], { stdio: 'ignore' }).status === 0;
  if (process.getuid?.() === 0 || dockerAnswers)
    return [await vitest('compose', ['--config', 'vitest.compose.config.ts'], extra, {})];
  console.log('\ncompose tier: did not run (not root, and no Docker engine answers to install or use)');
  return [];
}

const mode = (projections) => ({ PROJECTIONS: projections });
const defaultMode = process.env.PROJECTIONS ?? 'inline';
const runs = [];
if (tier === undefined) {
  runs.push(await vitest('inline', [], extra, mode('inline')));
  // Only when the whole suite runs (arguments pick files or tiers: run those once).
  if (extra.length === 0) {
    runs.push(await vitest('async', ['--project', 'e2e'], [], mode('async')));
    runs.push(...(await composeTier()));
  }
} else if (tier === 'compose') {
  runs.push(...(await composeTier()));
} else if (tier === 'e2e' && extra.length === 0) {
  runs.push(await vitest('e2e-inline', ['--project', 'e2e'], [], mode('inline')));
  runs.push(await vitest('e2e-async', ['--project', 'e2e'], [], mode('async')));
} else {
  runs.push(await vitest(tier, ['--project', tier], extra, mode(defaultMode)));
}
const passed = runs.reduce((sum, result) => sum + result.passed, 0);
const failures = runs.reduce((sum, result) => sum + result.failures, 0);
if (workerExitNotes.length > 0) console.log(`\nworkers that exited mid-file: ${workerExitNotes.join('; ')}`);
if (failureNotes.length > 0) console.log(`\nfailed:\n${failureNotes.map((note) => `  ${note}`).join('\n')}`);
console.log(`\nvitest: ${passed} passed, ${failures} failed`);
if (runs.some((result) => result.failed) || failures > 0 || passed === 0) process.exit(1);
