// @ts-check
import { readdirSync } from 'node:fs';
import path from 'node:path';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * The import boundaries of src/ (docs/architecture.md). Each feature folder is entered only through
 * the files listed here: its service and the schemas it publishes. `core/` and `verify/` are pure and
 * import nothing of the service; `http/` is plumbing and imports no feature; `client/` is the published
 * library and imports only what verifies. Features sit in layers, and none imports a layer above it;
 * `platform/` and `db/` sit below them all. The command (`cli/`) has client commands, which import the
 * client library only, and operator commands, which import the features' public files; `scripts/`
 * import src/ through its public entry points. The composition root (src/*.ts: context, app, main)
 * and tests may import anything.
 */
/** @type {Record<string, string[]>} */
const PUBLIC = {
  accounts: ['accounts-service.ts', 'accounts-schemas.ts'],
  keys: ['keyring.ts', 'key-directory.ts'],
  log: ['log-service.ts', 'log-schemas.ts'],
  tsa: ['tsa.ts'],
  payments: ['x402.ts', 'terms.ts'],
  stats: ['stats-service.ts'],
  proofs: ['proofs-service.ts', 'proof-schemas.ts'],
  webhooks: ['webhooks-service.ts', 'webhooks-schemas.ts'],
  anchors: ['anchors-service.ts', 'anchors-schemas.ts'],
  pages: [],
  health: [],
  metrics: [],
  witness: ['witness.ts'],
};
/** @type {string[][]} */
const LAYERS = [
  ['keys', 'accounts', 'stats', 'tsa', 'log', 'payments', 'witness'],
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

/**
 * What of src/ a folder may import, and only that: whole `folders`, single `files` (paths below src/:
 * `config.ts`, `client/client.ts`), and, with `features`, each feature's public files (PUBLIC). The
 * patterns are written as the importing file spells the path: `up` is the way from its folder to src/
 * (`../` from src/db/, `../../` from src/db/migrations/, `../../src/` from scripts/bench/). Gitignore
 * negation cannot re-include a folder's files, so a refused folder is `folder/*`, its allowed files `!`.
 */
function onlyFrom(
  /** @type {{ up?: string, folders?: string[], files?: string[], features?: boolean }} */ allowed,
  /** @type {string} */ message,
) {
  const { up = '../', folders = [], files = [], features = false } = allowed;
  /** @type {Record<string, string[]>} The files allowed in each refused folder ('' for src/ itself). */
  const open = features ? { ...PUBLIC } : {};
  for (const file of files) {
    const [folder, name] = file.includes('/') ? file.split('/') : ['', file];
    open[folder ?? ''] = [...(open[folder ?? ''] ?? []), name ?? ''];
  }
  const group = [`${up}*.ts`, ...(open[''] ?? []).map((name) => `!${up}${name}`)];
  for (const folder of FOLDERS.filter((f) => !folders.includes(f))) {
    group.push(`${up}${folder}/*`, ...(open[folder] ?? []).map((name) => `!${up}${folder}/${name}`));
  }
  return { group, message };
}

/** The rule of `files`: these patterns of imports are refused, each with its message. */
const refuse = (/** @type {string[]} */ files, /** @type {object[]} */ patterns) => ({
  files,
  ignores: TEST_CODE,
  rules: { 'no-restricted-imports': ['error', { patterns }] },
});

/** What the `hashproof` command may import of src/, from src/cli/ (`up` '../') or below it ('../../'). */
const CLI = {
  /** Client commands talk to a service through the published library (the package's export) only. */
  client: { folders: ['core', 'verify'], files: ['client/client.ts'] },
  /** Operator commands use the service's configuration, its plumbing below the features, and each feature's public files. */
  operator: { folders: ['core', 'verify', 'platform', 'db'], files: ['config.ts'], features: true },
};
const CLIENT_COMMANDS =
  'A client command talks to a service through the client library (client/client.ts); it imports only that, core/, verify/ and cli/output.ts, cli/help.ts.';
const OPERATOR_COMMANDS =
  "An operator command imports config.ts, core/, verify/, platform/, db/ and the features' public files only.";

/** What scripts/ may import of src/: its public entry points, and the module that stores proofs signed elsewhere. */
const SCRIPTS = {
  folders: ['core', 'verify', 'platform'],
  files: ['config.ts', 'client/client.ts', 'db/index.ts', 'proofs/proofs-import.ts'],
  features: true,
};
const SCRIPTS_MESSAGE =
  "scripts/ import src/ through its public entry points: config.ts, core/, verify/, platform/, db/index.ts, client/client.ts and the features' public files (proofs/proofs-import.ts to fill a database).";

const importRules = [
  ...Object.keys(PUBLIC).map((folder) =>
    refuse(
      [`src/${folder}/**/*.ts`],
      [
        ...boundaries(folder),
        { group: ['../cli/*'], message: 'The service imports nothing of the command.' },
      ],
    ),
  ),
  refuse(['src/core/**/*.ts'], [onlyFrom({ folders: ['core'] }, 'core/ is pure: it imports only core/.')]),
  refuse(
    ['src/verify/**/*.ts'],
    [onlyFrom({ folders: ['core', 'verify'] }, 'verify/ is pure: it imports only core/.')],
  ),
  refuse(
    ['src/client/**/*.ts'],
    [onlyFrom({ folders: ['core', 'verify', 'client'] }, 'The client library carries no service code.')],
  ),
  refuse(
    ['src/http/**/*.ts'],
    [
      {
        group: [...Object.keys(PUBLIC).map((f) => `../${f}/*`), ...COMPOSITION, '../cli/*'],
        message: 'http/ is plumbing: it imports no feature; a feature hands it an interface.',
      },
    ],
  ),
  // Below every feature: platform/ (the clock, logs, threads) imports only core/; db/ only core/,
  // platform/ and the type of its configuration.
  refuse(
    ['src/platform/**/*.ts'],
    [onlyFrom({ folders: ['core', 'platform'] }, 'platform/ is below every feature: it imports only core/.')],
  ),
  refuse(
    ['src/db/*.ts'],
    [
      onlyFrom(
        { folders: ['core', 'platform', 'db'], files: ['config.ts'] },
        'db/ is below every feature: it imports only core/, platform/ and config.ts.',
      ),
    ],
  ),
  refuse(
    ['src/db/*/**/*.ts'],
    [
      onlyFrom(
        { up: '../../', folders: ['core', 'platform', 'db'], files: ['config.ts'] },
        'db/ is below every feature: it imports only core/, platform/ and config.ts.',
      ),
    ],
  ),
  // The command: output.ts and help.ts serve both kinds of commands; main.ts (below) runs them.
  refuse(
    ['src/cli/*.ts'],
    [
      onlyFrom(CLI.client, CLIENT_COMMANDS),
      {
        group: ['./client/*', './operator/*', './main.ts'],
        message: 'output.ts and help.ts serve every command and import none.',
      },
    ],
  ),
  refuse(
    ['src/cli/main.ts'],
    [
      onlyFrom(
        { ...CLI.operator, files: [...CLI.operator.files, ...CLI.client.files] },
        'main.ts runs the commands: it imports the client library and what an operator command may.',
      ),
    ],
  ),
  refuse(
    ['src/cli/client/**/*.ts'],
    [
      onlyFrom({ ...CLI.client, up: '../../' }, CLIENT_COMMANDS),
      { group: ['../operator/*', '../main.ts'], message: CLIENT_COMMANDS },
    ],
  ),
  refuse(
    ['src/cli/operator/**/*.ts'],
    [
      onlyFrom({ ...CLI.operator, up: '../../' }, OPERATOR_COMMANDS),
      { group: ['../client/*', '../main.ts'], message: OPERATOR_COMMANDS },
    ],
  ),
  refuse(['scripts/*.ts'], [onlyFrom({ ...SCRIPTS, up: '../src/' }, SCRIPTS_MESSAGE)]),
  refuse(['scripts/*/*.ts'], [onlyFrom({ ...SCRIPTS, up: '../../src/' }, SCRIPTS_MESSAGE)]),
  refuse(['scripts/*/*/*.ts'], [onlyFrom({ ...SCRIPTS, up: '../../../src/' }, SCRIPTS_MESSAGE)]),
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
