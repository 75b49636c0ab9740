// The architecture rules, checked by `npm run check:architecture` (and by `npm test`) with
// dependency-cruiser. They keep the layout CONTRIBUTING.md describes:
// - no import cycles;
// - contracts and platform are the ground floor: they import no other workspace package;
// - a package is used only through what its package.json exports, never through its files;
// - no package, test or script imports a service (services are entry points, not libraries);
// - only the queue module (packages/jobs) imports bullmq;
// - only the code-runs package imports the sandbox, and only the sandbox imports isolated-vm.
// One more rule is about names, not modules, so a script checks it after these, in the same
// `npm run check:architecture`: contexts register only through their manifest (scripts/check-contexts.mjs).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const root = import.meta.dirname;

/** Every file a workspace package exports, as a path from the repository's root. */
function exportedEntries() {
  const entries = [];
  for (const name of readdirSync(join(root, 'packages'))) {
    let manifest;
    try {
      manifest = JSON.parse(readFileSync(join(root, 'packages', name, 'package.json'), 'utf8'));
    } catch {
      continue;
    }
    const targets = [];
    const collect = (value) => {
      if (typeof value === 'string') targets.push(value);
      else if (value && typeof value === 'object') Object.values(value).forEach(collect);
    };
    collect(manifest.exports ?? manifest.main);
    for (const target of targets) entries.push(`packages/${name}/${target.replace(/^\.\//, '')}`);
  }
  return entries;
}

const escape = (path) => path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const entryPattern = `^(${exportedEntries().map(escape).join('|')})$`;

export default {
  forbidden: [
    {
      name: 'no-cycles',
      comment: 'An import cycle makes load order matter and hides which module owns what.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'resolvable',
      comment:
        "An import that does not resolve (a package missing from the importer's package.json) would fail at run time.",
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
    {
      name: 'ground-floor-imports-no-context',
      comment: 'contracts and platform are shared by every context, so they may not depend on one.',
      severity: 'error',
      from: { path: '^packages/(contracts|platform)/' },
      to: { path: '^packages/', pathNot: '^packages/(contracts|platform)/' },
    },
    {
      name: 'packages-through-their-exports',
      comment: "Another package's files are its internals: import what its package.json exports.",
      severity: 'error',
      from: { path: '^packages/([^/]+)/' },
      to: { path: '^packages/', pathNot: ['^packages/$1/', entryPattern] },
    },
    {
      name: 'tests-and-tools-through-exports',
      comment: 'e2e tests, benchmarks and scripts use packages as a client would: through their exports.',
      severity: 'error',
      from: { path: '^(e2e|scripts)/' },
      to: { path: '^packages/', pathNot: entryPattern },
    },
    {
      name: 'no-imports-of-services',
      comment: 'A service is an entry point that composes packages; nothing builds on one.',
      severity: 'error',
      from: { pathNot: '^services/' },
      to: { path: '^services/' },
    },
    {
      name: 'only-jobs-imports-bullmq',
      comment:
        'One owner for the job queues: the connection rule, prefix, names and clean-up live in packages/jobs.',
      severity: 'error',
      from: { pathNot: '^packages/jobs/' },
      to: { path: 'node_modules/bullmq/' },
    },
    {
      name: 'only-code-runs-imports-sandbox',
      comment:
        'Tenant code runs one way: queued, sealed and run by packages/code-runs, which alone uses the sandbox (the benchmark also measures the sandbox alone).',
      severity: 'error',
      from: { pathNot: ['^packages/(code-runs|sandbox)/', '^e2e/bench/'] },
      to: { path: '^packages/sandbox/' },
    },
    {
      name: 'only-sandbox-runs-isolated-vm',
      comment: 'The isolates live in the sandbox child processes of packages/sandbox, nowhere else.',
      severity: 'error',
      from: { pathNot: '^packages/sandbox/' },
      to: { path: 'node_modules/isolated-vm/' },
    },
    {
      name: 'one-services-imports-no-other',
      comment: 'Each service composes packages; shared wiring belongs in a package (runtime).',
      severity: 'error',
      from: { path: '^services/([^/]+)/' },
      to: { path: '^services/', pathNot: '^services/$1/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(node_modules|\\.data|\\.tools|dist|generated)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    combinedDependencies: true,
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.mts', '.js', '.mjs', '.cjs', '.json'],
      mainFields: ['module', 'main', 'types'],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
