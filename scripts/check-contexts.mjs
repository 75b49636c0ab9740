// The architecture rule dependency-cruiser cannot express (it sees modules, not names), run by
// `npm run check:architecture` after it: contexts register only through their manifest.
//
// A context package is one with a `src/context.ts`: its manifest (`ContextManifest` of
// @tokenvault/cqrs), which gathers what the context contributes — migrations, read models,
// write-side effects, claims, invalidations, event types, routes. The values it imports from its
// own files are the context's registrations. The rule:
// - no file of packages/runtime or services/ imports one of them from the context's package:
//   the runtime takes them from the manifests it lists (packages/runtime/src/contexts.ts), so a
//   new context is one entry there, never a line in each of the places that loop over them;
// - the package's entry exports the manifest, and that list names every context package.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

const root = join(import.meta.dirname, '..');
const contextsList = 'packages/runtime/src/contexts.ts';

/** The import declarations of a file: module name, and the value names it imports (types aside). */
function importsOf(file) {
  const source = ts.createSourceFile(file, readFileSync(join(root, file), 'utf8'), ts.ScriptTarget.Latest);
  const found = [];
  for (const statement of source.statements) {
    if (!ts.isImportDeclaration(statement) && !ts.isExportDeclaration(statement)) continue;
    if (!statement.moduleSpecifier || !ts.isStringLiteral(statement.moduleSpecifier)) continue;
    const module = statement.moduleSpecifier.text;
    const names = [];
    if (ts.isImportDeclaration(statement)) {
      const clause = statement.importClause;
      if (clause && !clause.isTypeOnly && clause.namedBindings && ts.isNamedImports(clause.namedBindings)) {
        for (const element of clause.namedBindings.elements) {
          if (!element.isTypeOnly) names.push((element.propertyName ?? element.name).text);
        }
      }
    } else if (!statement.isTypeOnly && statement.exportClause && ts.isNamedExports(statement.exportClause)) {
      for (const element of statement.exportClause.elements) {
        if (!element.isTypeOnly) names.push((element.propertyName ?? element.name).text);
      }
    }
    found.push({ module, names });
  }
  return found;
}

/** The exported `const` names of a file (the manifest's name). */
function exportedConstsOf(file) {
  const source = ts.createSourceFile(file, readFileSync(join(root, file), 'utf8'), ts.ScriptTarget.Latest);
  return source.statements
    .filter(
      (statement) =>
        ts.isVariableStatement(statement) &&
        statement.modifiers?.some((modifier) => modifier.kind === ts.SyntaxKind.ExportKeyword),
    )
    .flatMap((statement) =>
      statement.declarationList.declarations.map((declaration) => declaration.name.text),
    );
}

function tsFilesUnder(directory) {
  if (!existsSync(join(root, directory))) return [];
  return readdirSync(join(root, directory)).flatMap((name) => {
    const path = join(directory, name);
    if (name === 'node_modules') return [];
    if (statSync(join(root, path)).isDirectory()) return tsFilesUnder(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

const violations = [];

/** Every context package: its name in imports, its manifest's name, and its registrations. */
const contexts = readdirSync(join(root, 'packages'))
  .filter((name) => existsSync(join(root, 'packages', name, 'src/context.ts')))
  .map((name) => {
    const manifestFile = `packages/${name}/src/context.ts`;
    const packageName = JSON.parse(readFileSync(join(root, 'packages', name, 'package.json'), 'utf8')).name;
    const [manifest, ...others] = exportedConstsOf(manifestFile);
    if (!manifest || others.length) {
      violations.push(
        `${manifestFile} exports one manifest (a const), not ${[manifest, ...others].join(', ')}`,
      );
    }
    const registrations = new Set(
      importsOf(manifestFile)
        .filter(({ module }) => module.startsWith('./'))
        .flatMap(({ names }) => names),
    );
    const entry = `packages/${name}/src/index.ts`;
    const exportsManifest = importsOf(entry).some(
      ({ module, names }) => module === './context.ts' && names.includes(manifest),
    );
    if (!exportsManifest) violations.push(`${entry} does not export ${manifest} (its manifest)`);
    return { packageName, manifest, registrations };
  });

const listed = new Set(
  existsSync(join(root, contextsList)) ? importsOf(contextsList).flatMap(({ names }) => names) : [],
);
for (const context of contexts) {
  if (!listed.has(context.manifest)) {
    violations.push(`${contextsList} does not list ${context.manifest} (${context.packageName})`);
  }
}

for (const file of [...tsFilesUnder('packages/runtime/src'), ...tsFilesUnder('services')]) {
  for (const { module, names } of importsOf(file)) {
    const context = contexts.find((candidate) => candidate.packageName === module);
    if (!context) continue;
    for (const name of names.filter((name) => context.registrations.has(name))) {
      violations.push(
        `${relative(root, join(root, file))} imports ${name} from ${module}: a context registers only through its manifest (${context.manifest}, listed in ${contextsList})`,
      );
    }
  }
}

if (violations.length) {
  console.error(`contexts-register-through-their-manifest: ${violations.length} violation(s)\n`);
  for (const violation of violations) console.error(`  ${violation}`);
  process.exit(1);
}
console.log(`contexts-register-through-their-manifest: ${contexts.length} contexts, no violation`);
