#!/usr/bin/env node
/**
 * Bundles the compiled CLI (dist/main/index.js: oclif and every command) with esbuild into one
 * CommonJS file, dist/main/index.cjs, so that `tokenctl <command>` reads one file instead of
 * resolving and compiling ~500 modules. CommonJS, because bin/run.js compiles it as a script
 * with V8's code cache (dist/main/index.cjs.cache, see scripts/code-cache.js), which Node 20 offers
 * for scripts only, not for ES modules. What only some commands need (the HTTP server,
 * PostgreSQL, prompts) is in the file but runs only when imported; with the code cache, V8 does
 * not even parse it then. Native and optional modules stay outside.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { createRequire, isBuiltin } from 'node:module';
import { build } from 'esbuild';

/**
 * Modules that oclif requires as it loads, but that no tokenctl command reaches when it runs.
 * Inside oclif, each is replaced by a stand-in that requires the real module, unbundled, from
 * where oclif would, on first use: a command neither reads, compiles nor runs them at each start.
 * A module used all the same (say by a future oclif) still works, only without the saving.
 */
const DEFERRED = {
  tinyglobby: 'finding commands by file pattern: tokenctl lists its commands (explicit strategy)',
  minimatch: 'matching the names of core plugins, loaded only for commands not of this package',
  semver: 'its Node version check, which finds no package.json of its own inside the bundle',
  lilconfig: 'searching .oclifrc files, for a package.json without an oclif section',
  ejs: 'rendering templates in help and in update URLs',
  'cli-spinners': 'the spinner of ux.action on a terminal, which no command starts',
  'node:readline': 'reading flag values from stdin',
  'node:child_process': 'telling the Windows shells apart',
  'node:perf_hooks': 'performance tracing (OCLIF_PERFORMANCE)',
};

const requireAsOclif = createRequire(createRequire(import.meta.url).resolve('@oclif/core'));

/**
 * A CommonJS module that requires `specifier`, as @oclif/core does, when first used. Whether it
 * is transpiled ES (`__esModule`, which TypeScript's import helpers read as they import it) is
 * answered without loading it, from the module as it is now.
 */
function deferredModule(specifier) {
  const from = isBuiltin(specifier) ? 'require' : "createRequire(createRequire(__filename).resolve('@oclif/core'))";
  const esModule = !isBuiltin(specifier) && Boolean(requireAsOclif(specifier).__esModule);
  return `const { createRequire } = require('node:module');
let real;
const load = () => (real ??= ${from}(${JSON.stringify(specifier)}));
module.exports = new Proxy({}, {
  get: (_, key) => (key === '__esModule' ? ${esModule} : load()[key]),
  has: (_, key) => key in load(),
  ownKeys: () => Reflect.ownKeys(load()),
  getOwnPropertyDescriptor: (_, key) => {
    const descriptor = Reflect.getOwnPropertyDescriptor(load(), key);
    return descriptor && { ...descriptor, configurable: true };
  },
});`;
}

/** @type {import('esbuild').Plugin} */
const deferModules = {
  name: 'defer-modules',
  setup(build) {
    const names = Object.keys(DEFERRED).map((name) => name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
    build.onResolve({ filter: new RegExp(`^(${names.join('|')})$`) }, (args) => {
      if (!/[\\/]@oclif[\\/]core[\\/]/.test(args.importer)) return undefined;
      return { path: args.path, namespace: 'deferred' };
    });
    build.onLoad({ filter: /.*/, namespace: 'deferred' }, (args) => ({ contents: deferredModule(args.path), loader: 'js' }));
  },
};

/**
 * `import.meta.url` of the ES sources, in CommonJS: the URL of the bundle (the server finds its
 * cluster worker next to it).
 */
const importMetaUrl = {
  name: 'import-meta-url',
  setup(build) {
    build.onResolve({ filter: /^tokenctl:import-meta-url$/ }, () => ({ path: 'import-meta-url', namespace: 'tokenctl' }));
    build.onLoad({ filter: /.*/, namespace: 'tokenctl' }, () => ({
      contents: "export const importMetaUrl = require('node:url').pathToFileURL(__filename).href;",
      loader: 'js',
    }));
  },
};

rmSync('dist/main/index.cjs.cache', { force: true }); // made for the bundle being replaced
const result = await build({
  write: false,
  entryPoints: ['dist/main/index.js'],
  outfile: 'dist/main/index.cjs',
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  define: { 'import.meta.url': 'importMetaUrl' },
  inject: ['tokenctl:import-meta-url'],
  // typescript: only oclif's development mode asks for it (bin/dev.js), and it copes without;
  // selfsigned: loaded only to make a certificate, and its CommonJS exports stay as Node reads them.
  external: ['better-sqlite3', 'pg-native', 'fsevents', 'typescript', 'selfsigned'],
  plugins: [deferModules, importMetaUrl],
  logLevel: 'warning',
});

/**
 * In Node 20, an `import()` inside a script compiled from V8's code cache fails ("A dynamic
 * import callback was not specified"), so the bundle's dynamic imports (oclif loading its ES
 * plugins, the certificate library) call the loader's `__tokenctlImport` (bin/load-bundle.cjs)
 * instead. Any other `import(` left in code (not in a comment) fails the build, so that a
 * dependency that starts using one is seen here, not by a user.
 */
const [output] = result.outputFiles;
const code = output.text.replace(/\bawait import\(/g, 'await __tokenctlImport(');
const left = code.split('\n').filter((line) => /(^|[^\w.$'"`])import\(/.test(line) && !/^\s*(\*|\/\/)/.test(line));
if (left.length > 0) throw new Error(`dynamic import() left in the bundle, which fails when run from the code cache:\n${left.join('\n')}`);
writeFileSync(output.path, code);
