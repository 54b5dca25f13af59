import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * The layer rules (STYLE.md "Dependency direction", CONTRACT.md): which folder of src/ may import
 * which. Each entry forbids, for the files under `files`, relative imports that reach the folders
 * named in `layers` (written `../cli/…`, `../../engine/…`), and the packages in `packages`.
 * Import cycles are checked by scripts/check-cycles.js, also in `npm run lint`.
 */
const ABOVE_STORE = ['engine', 'events', 'cli', 'commands', 'http', 'serve', 'remote', 'migrate', 'main', 'resource-server'];

/**
 * `no-restricted-imports` for `patterns` (regular expressions over the specifier), and the same
 * for lazy `await import('…')`, which that rule does not see (no-restricted-syntax; `/` written
 * `\x2F` because a selector's regular expression ends at the first slash).
 */
const restrict = (files, patterns) => ({
  files,
  rules: {
    'no-restricted-imports': ['error', { patterns }],
    'no-restricted-syntax': [
      'error',
      ...patterns.map(({ regex, message }) => ({ selector: `ImportExpression[source.value=/${regex.replaceAll('/', '\\x2F')}/]`, message })),
    ],
  },
});
const layer = (files, layers, why, packages = []) =>
  restrict(files, [
    { regex: `^(\\.\\./)+(${layers.join('|')})(/|$)`, message: why },
    ...(packages.length > 0 ? [{ regex: `^(${packages.join('|')})(/|$)`, message: why }] : []),
  ]);
/**
 * STYLE.md's rule for src/engine: itself and the store interface, no driver, framework or terminal.
 * `up` is `../` for the folder's own files, `../../` for a subfolder's (engine/grants/).
 */
const overStoreInterface = (files, who, up = '\\.\\./') =>
  restrict(
    [files],
    [
      // The DPoP rules are the resource-server module's, shared so that the two cannot disagree (a leaf: it imports nothing).
      { regex: `^${up}(?!store/store\\.js$|resource-server/dpop-rules\\.js$)`, message: `${who} imports only its own folder, the store interface (../store/store.js) and the DPoP rules (../resource-server/dpop-rules.js)` },
      { regex: '^(@oclif|fastify|@fastify|pg|pg-[a-z]+|better-sqlite3|chalk|@inquirer)(/|$)', message: `${who} knows nothing of oclif, HTTP, SQL or chalk` },
      { regex: '^node:(http|https|http2|net|tls|cluster)$', message: `${who} knows nothing of the transport` },
    ],
  );
const LAYERS = [
  // The resource-server module (package entry tokenctl/resource-server): a client library of its own.
  restrict(['src/resource-server/**/*.ts'], [{ regex: '^\\.\\./', message: 'resource-server is a client library (tokenctl/resource-server): it imports only its own folder' }]),
  // The engine: the store's interface (store/store.ts) and itself; no oclif, HTTP, SQL or chalk.
  overStoreInterface('src/engine/*.ts', 'the engine'),
  overStoreInterface('src/engine/*/**/*.ts', 'the engine', '(\\.\\./){2,}'),
  // The migration use case (tokenctl migrate): like the engine, over the store interface only.
  overStoreInterface('src/migrate/**/*.ts', 'a migration'),
  // Stores: nothing above them.
  layer(['src/store/**/*.ts'], ABOVE_STORE, 'a store imports nothing above the store layer', ['@oclif', 'fastify', '@fastify', 'chalk']),
  // Security events (signing, poll, push): the store interface and the engine's types, never the CLI, HTTP or serve.
  layer(['src/events/**/*.ts'], ['cli', 'commands', 'http', 'serve', 'main', 'migrate', 'remote', 'metrics', 'resource-server'], 'events/ is below http/ and serve/: it imports the store interface and the engine, not them', ['@oclif', 'fastify', '@fastify', 'chalk', 'pg', 'better-sqlite3']),
  // HTTP: the engine below it, never the CLI, the commands, serve or the start-up.
  layer(['src/http/**/*.ts'], ['cli', 'commands', 'serve', 'main', 'migrate', 'remote', 'resource-server'], 'http/ is below the CLI and serve: it imports the engine, not them', ['@oclif']),
  // Metrics and tracing: they watch the HTTP layer and the store, below serve and the CLI (errors are MetricsListenError).
  layer(['src/metrics/**/*.ts'], ['cli', 'commands', 'serve', 'main', 'migrate', 'remote', 'resource-server'], 'metrics/ is below serve/ and the CLI: it watches http/ and the store, and the command maps its errors', ['@oclif', 'chalk']),
  // serve: the process around the HTTP server, below the commands (errors are ServeError).
  layer(['src/serve/**/*.ts'], ['cli', 'commands', 'main'], 'serve/ is below the commands: no CliError, no rendering (the command maps ServeError)', ['@oclif', 'chalk']),
  // The CLI's shared parts: below the commands and the start-up.
  layer(['src/cli/**/*.ts'], ['commands', 'main', 'serve'], 'cli/ is what commands share: it imports no command, no start-up, no server'),
  // The HTTP client of --url: the protocol only.
  layer(['src/remote/**/*.ts'], ['cli', 'commands', 'serve', 'main', 'http', 'store', 'migrate'], 'remote/ speaks the spec\'s protocol: no CLI, no server, no store'),
  // The commands: the CLI's entry points, below the start-up.
  layer(['src/commands/**/*.ts'], ['main'], 'nothing imports the start-up (src/main/): it is the top of the layers'),
  // Tests reach the start-up through the binary (bin/run.js), never by import.
  restrict(['test/**/*.ts'], [{ regex: '(^|/)src/main(/|$)', message: 'nothing imports the start-up (src/main/): run bin/run.js' }]),
];

export default tseslint.config(
  { ignores: ['dist/**', 'packages/*/dist/**', 'dist-typecheck/**', 'node_modules/**', 'bench/results/**', 'oclif.manifest.json'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly', Buffer: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setImmediate: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': ['error', { allow: ['warn', 'error'] }],
    },
  },
  {
    files: ['test/**', 'bench/**', 'bin/**'],
    rules: { 'no-console': 'off' },
  },
  {
    // The race tests count outcomes across concurrent rounds: `count += await …` would lose counts.
    files: ['test/race/**'],
    rules: { 'require-atomic-updates': 'error' },
  },
  ...LAYERS,
  {
    // CommonJS (bin/load-bundle.cjs): require and module are its way of importing and exporting.
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { require: 'readonly', module: 'writable' } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
