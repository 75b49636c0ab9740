// The naming rule of the packages, run by `npm run check:architecture`: a source file's name says
// its job and is said once. A newcomer who opens `tokens.commands.ts` knows which of the tokens
// files it is without reading its folder; five files all called `tokens.ts` did not say that.
//
// Within `packages/*/src` and the console's `app/`, no two source files share a name, but for
// the names every package has by convention: its entry (`index.ts`), its context manifest
// (`context.ts`), its migrations (`migrations.ts`), its test helpers entry (`testing.ts`) and the
// console's entry (`main.ts`). Generated files (`generated/`) are the generator's to name.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = join(import.meta.dirname, '..');
const conventional = new Set(['index.ts', 'context.ts', 'migrations.ts', 'testing.ts', 'main.ts']);

function sourceFiles(dir) {
  const found = [];
  for (const entry of readdirSync(dir)) {
    if (entry === 'node_modules' || entry === 'generated') continue;
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) found.push(...sourceFiles(path));
    else if (entry.endsWith('.ts') && !entry.endsWith('.d.ts')) found.push(path);
  }
  return found;
}

const byName = new Map();
for (const pkg of readdirSync(join(root, 'packages'))) {
  for (const dir of ['src', 'app']) {
    const path = join(root, 'packages', pkg, dir);
    if (!existsSync(path)) continue;
    for (const file of sourceFiles(path)) {
      const name = file.split('/').pop();
      if (conventional.has(name)) continue;
      const same = byName.get(name) ?? [];
      same.push(relative(root, file));
      byName.set(name, same);
    }
  }
}

const repeated = [...byName].filter(([, files]) => files.length > 1);
for (const [name, files] of repeated) {
  console.error(`unique-file-names: ${name} names ${files.length} files: ${files.join(', ')}`);
}
if (repeated.length > 0) {
  console.error(
    'Give each a name of its job, with a role suffix where a resource has several ' +
      '(tokens.routes.ts, tokens.commands.ts, tokens.queries.ts, tokens.projection.ts).',
  );
  process.exit(1);
}
console.log('unique-file-names: no source file name repeats across packages');
