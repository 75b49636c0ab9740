// The whole test suite: static checks first (fast failures), then every tier of vitest, then one
// plain closing line with the counts.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const run = (command, args) => execFileSync(command, args, { stdio: 'inherit' });
const report = '.data/vitest-report.json';
run('npx', ['tsc', '-p', 'tsconfig.json', '--noEmit']);
run('npx', ['eslint', '.']);
let failed = false;
try {
  run('npx', [
    'vitest',
    'run',
    '--reporter=default',
    '--reporter=json',
    `--outputFile.json=${report}`,
    ...process.argv.slice(2),
  ]);
} catch {
  failed = true;
}
const results = JSON.parse(readFileSync(report, 'utf8'));
// A file that failed outside any test (a hook, an import) counts as one failure.
const failedFiles = results.testResults.filter(
  (file) => file.status === 'failed' && !file.assertionResults.some((test) => test.status === 'failed'),
).length;
const failures = results.numFailedTests + failedFiles;
console.log(`\nvitest: ${results.numPassedTests} passed, ${failures} failed`);
if (failed || failures > 0 || results.numPassedTests === 0) process.exit(1);
