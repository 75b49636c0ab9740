// Redocly's linter, recommended rules (redocly.yaml), on packages/sdk/openapi.json: the document
// GET /openapi.json serves, checked in by `npm run sdk:generate` (e2e/sdk.e2e.spec.ts fails when
// the two differ). Offline: no telemetry, no update check. A warning fails it as an error does.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const lint = (format) =>
  spawnSync(
    process.execPath,
    [
      join(root, 'node_modules/@redocly/cli/bin/cli.js'),
      'lint',
      `--format=${format}`,
      'packages/sdk/openapi.json',
    ],
    {
      cwd: root,
      encoding: 'utf8',
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
    },
  );
const result = lint('json');
let totals;
try {
  totals = JSON.parse(result.stdout).totals;
} catch {
  process.stderr.write(result.stdout + result.stderr);
  process.exit(1);
}
if (totals.errors > 0 || totals.warnings > 0) process.stdout.write(lint('stylish').stdout);
console.log(`redocly lint packages/sdk/openapi.json: ${totals.errors} errors, ${totals.warnings} warnings`);
if (totals.errors > 0 || totals.warnings > 0) process.exit(1);
