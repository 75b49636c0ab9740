// The whole test suite: static checks first (fast failures), then every tier of vitest.
import { execFileSync } from 'node:child_process';

const run = (command, args) => execFileSync(command, args, { stdio: 'inherit' });
run('npx', ['tsc', '-p', 'tsconfig.json', '--noEmit']);
run('npx', ['eslint', '.']);
run('npx', ['vitest', 'run', ...process.argv.slice(2)]);
