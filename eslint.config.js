import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import prettier from 'eslint-config-prettier';
import globals from 'globals';

export default tseslint.config(
  // dist/: the SDK's build for publishing (its prepack), gitignored.
  { ignores: ['**/node_modules/**', '.data/**', 'infra/kafka/.cache/**', '**/dist/**'] },
  js.configs.recommended,
  // Type-aware: the TypeScript files are linted with the types of tsconfig.json (the project
  // service finds it), so dropped promises, promises passed where a void callback is expected and
  // switches that miss a case of a union are errors.
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // Off from recommendedTypeChecked: an async function without an await is how an
      // implementation meets a Promise-returning interface (stores, handlers, test fakes), and
      // making it sync would turn its throws into synchronous ones.
      '@typescript-eslint/require-await': 'off',
      // Beyond recommendedTypeChecked: every member of a union is named in a switch over it (a
      // default still catches what the types do not know of), so a new event type or variant
      // is a lint error wherever it is not yet considered.
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
    },
  },
  {
    // Vitest's asymmetric matchers (expect.any, expect.stringMatching, …) are typed `any` on
    // purpose, to stand in for a value of any type in an expected object.
    files: ['**/*.spec.ts'],
    rules: { '@typescript-eslint/no-unsafe-assignment': 'off' },
  },
  {
    // No module-global mutable state on the write path (docs/architecture.md): what a command,
    // a decider, a projection or a store needs comes in as an argument or lives in an instance,
    // never in a module's Map or `let` that the next append reads (the token keys once went from
    // the vault to the append's projection through such a Map). Test files and test helpers aside.
    files: [
      'packages/*/src/commands/**/*.ts',
      'packages/*/src/domain/**/*.ts',
      'packages/*/src/projections/**/*.ts',
      'packages/vault/src/**/*.ts',
      'packages/cqrs/src/**/*.ts',
      'packages/eventstore/src/**/*.ts',
    ],
    ignores: ['**/*.spec.ts', '**/testing.ts', '**/testing/**'],
    rules: {
      'no-restricted-syntax': [
        'error',
        ...[
          'Program > VariableDeclaration',
          'Program > ExportNamedDeclaration > VariableDeclaration',
        ].flatMap((declaration) => [
          {
            selector: `${declaration}[kind=/^(let|var)$/]`,
            message:
              'No module-global mutable state on the write path: a top-level `let` is shared by every request. Pass it in, or keep it in an instance.',
          },
          ...['', ' > TSAsExpression', ' > TSSatisfiesExpression'].map((wrapper) => ({
            selector: `${declaration} > VariableDeclarator${wrapper} > NewExpression[callee.name=/^(Map|Set|WeakMap|WeakSet)$/]`,
            message:
              'No module-global mutable state on the write path: a top-level Map or Set is shared by every request. Pass what it holds with the call (an append carries side data), or keep it in an instance.',
          })),
        ]),
      ],
    },
  },
  {
    // Deciders say what is wrong in domain words (docs/architecture.md): a DomainError of
    // @tokenvault/platform, which the HTTP edge maps to a problem (problemOf, errors.ts). A status
    // chosen in the domain would be a second mapping.
    files: ['packages/*/src/domain/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            {
              name: '@tokenvault/platform',
              importNames: [
                'Problem',
                'badRequest',
                'unauthorized',
                'forbidden',
                'notFound',
                'requestTimeout',
                'conflict',
                'gone',
                'payloadTooLarge',
                'unsupportedMediaType',
                'unprocessable',
                'tooManyRequests',
                'internalError',
                'badGateway',
                'serviceUnavailable',
                'gatewayTimeout',
                'problemOfStatus',
                'problemFromParts',
                'validationProblem',
              ],
              message:
                'Domain code throws a DomainError, not an HTTP problem: invalidCommand, notAllowed, notFoundError, alreadyExists, conflictError, goneError or unprocessableCommand (@tokenvault/platform, domain-errors.ts); the edge maps it (problemOf).',
            },
          ],
        },
      ],
    },
  },
  {
    // Plain JavaScript (scripts, infra, the sandbox's guest prelude) is in no tsconfig: untyped.
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    ...tseslint.configs.disableTypeChecked,
  },
  prettier,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
);
