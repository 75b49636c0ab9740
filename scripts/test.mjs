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
console.log(`\nvitest: ${results.numPassedTests} passed, ${results.numFailedTests} failed`);
if (failed || results.numFailedTests > 0 || results.numPassedTests === 0) process.exit(1);
