// @ts-check
import { readdirSync } from 'node:fs';
import path from 'node:path';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * The import boundaries of src/ (docs/architecture.md). Each feature folder is entered only through
 * the files listed here: its service and the schemas it publishes. `core/` and `verify/` are pure and
 * import nothing of the service; `http/` is plumbing and imports no feature; `client/` is the published
 * library and imports only what verifies. Features sit in layers, and none imports a layer above it.
 * The composition root (src/*.ts: context, app, main) and tests may import anything.
 */
/** @type {Record<string, string[]>} */
const PUBLIC = {
  accounts: ['accounts-service.ts', 'accounts-schemas.ts'],
  keys: ['keyring.ts'],
  log: ['log-service.ts', 'log-schemas.ts'],
  tsa: ['tsa.ts'],
  payments: ['x402.ts'],
  stats: ['stats-service.ts'],
  proofs: ['proofs-service.ts', 'proof-schemas.ts'],
  webhooks: ['webhooks-service.ts', 'webhooks-schemas.ts'],
  anchors: ['anchors-service.ts', 'anchors-schemas.ts'],
  pages: [],
  health: [],
  metrics: [],
};
/** @type {string[][]} */
const LAYERS = [
  ['keys', 'accounts', 'stats', 'tsa', 'log', 'payments'],
  ['proofs'],
  ['webhooks', 'anchors'],
  ['pages', 'health', 'metrics'],
];
const COMPOSITION = ['../context.ts', '../app.ts', '../main.ts'];
/** Tests, and the set-up modules that several tests of a folder share. */
const TEST_CODE = ['**/*.test.ts', '**/*-test-setup.ts'];

/** An import of another feature's inside, by relative path from a sibling folder. */
const insideOf = (/** @type {string} */ feature) => ({
  group: [`../${feature}/*`, ...PUBLIC[feature].map((file) => `!../${feature}/${file}`)],
  message: `Import ${feature}/ through ${PUBLIC[feature].join(' or ') || 'its routes, from the app only'}.`,
});

/** @param {string} folder */
function boundaries(folder) {
  const layer = LAYERS.findIndex((names) => names.includes(folder));
  const above = LAYERS.slice(layer + 1).flat();
  return [
    ...Object.keys(PUBLIC)
      .filter((feature) => feature !== folder && !above.includes(feature))
      .map(insideOf),
    ...(above.length > 0
      ? [{ group: above.map((f) => `../${f}/*`), message: `${folder}/ is below ${above.join(', ')}.` }]
      : []),
  ];
}

const FOLDERS = readdirSync(path.join(import.meta.dirname, 'src'), { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name);

/** Everything of src/ but the `allowed` folders (gitignore negation cannot re-include a folder's files). */
const onlyFrom = (/** @type {string[]} */ allowed, /** @type {string} */ message) => ({
  group: ['../*.ts', ...FOLDERS.filter((folder) => !allowed.includes(folder)).map((f) => `../${f}/*`)],
  message,
});

const importRules = [
  ...Object.keys(PUBLIC).map((folder) => ({
    files: [`src/${folder}/**/*.ts`],
    ignores: TEST_CODE,
    rules: { 'no-restricted-imports': ['error', { patterns: boundaries(folder) }] },
  })),
  {
    files: ['src/core/**/*.ts'],
    ignores: TEST_CODE,
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [onlyFrom([], 'core/ is pure: it imports only core/.')] },
      ],
    },
  },
  {
    files: ['src/verify/**/*.ts'],
    ignores: TEST_CODE,
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [onlyFrom(['core'], 'verify/ is pure: it imports only core/.')] },
      ],
    },
  },
  {
    files: ['src/client/**/*.ts'],
    ignores: TEST_CODE,
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [onlyFrom(['core', 'verify'], 'The client library carries no service code.')] },
      ],
    },
  },
  {
    files: ['src/http/**/*.ts'],
    ignores: TEST_CODE,
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: [...Object.keys(PUBLIC).map((f) => `../${f}/*`), ...COMPOSITION],
              message: 'http/ is plumbing: it imports no feature; a feature hands it an interface.',
            },
          ],
        },
      ],
    },
  },
];

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', 'data/', 'coverage/', 'artifacts/', 'test/chain/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        projectService: { allowDefaultProject: ['eslint.config.js'] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        // node:test runs top-level tests itself; their returned promises are not the caller's to await.
        {
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['test', 'describe', 'it', 'suite'] },
          ],
        },
      ],
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/require-await': 'off',
      eqeqeq: ['error', 'always', { null: 'ignore' }],
    },
  },
  {
    files: [...TEST_CODE, 'test/**/*.ts', 'scripts/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      // Tests read JSON answers whose shape is what they assert.
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  {
    // The pages' browser script: plain JavaScript served as it is, outside the TypeScript project.
    files: ['src/pages/assets/**/*.js'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      parserOptions: { projectService: false, project: false },
      sourceType: 'script',
      globals: {
        window: 'readonly',
        document: 'readonly',
        navigator: 'readonly',
        fetch: 'readonly',
        Intl: 'readonly',
        setTimeout: 'readonly',
      },
    },
  },
  ...importRules,
);
