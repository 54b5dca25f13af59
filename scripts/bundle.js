#!/usr/bin/env node
/**
 * Bundles the compiled CLI (dist/cli/main.js: oclif and every command) into one ES module with
 * esbuild, in place, so that `tokenctl <command>` reads one file instead of resolving and
 * compiling ~500 CommonJS modules. Code only some commands need (the HTTP server, PostgreSQL,
 * prompts) is imported lazily and lands in chunks loaded on use. Native and optional modules
 * stay outside.
 */
import { rmSync } from 'node:fs';
import { createRequire, isBuiltin } from 'node:module';
import { relative } from 'node:path';
import { build } from 'esbuild';

const banner = [
  "import { createRequire as __tokenctlRequire } from 'node:module';",
  "import { fileURLToPath as __tokenctlPath } from 'node:url';",
  "import { dirname as __tokenctlDir } from 'node:path';",
  'const require = __tokenctlRequire(import.meta.url);',
  'const __filename = __tokenctlPath(import.meta.url);',
  'const __dirname = __tokenctlDir(__filename);',
].join('\n');

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
  const from = isBuiltin(specifier) ? 'require' : "createRequire(require.resolve('@oclif/core'))";
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
 * Node's built-in modules and better-sqlite3, imported as CommonJS (through the banner's
 * `require`) instead of with `import`. For an ES import of a built-in, Node builds a module
 * facade that reads every one of its exports, and so runs their lazy getters: `import fs from
 * 'node:fs'` loads the fs streams and fs/promises, `node:process` creates process.stdin,
 * `node:crypto` web crypto, and so on. For an ES import of a CommonJS package, Node first scans
 * its source, and that of the modules it re-exports, for the names it exports. esbuild's
 * CommonJS interop reads an export only when the code uses it.
 */
const REQUIRED_EXTERNALS = new Set(['better-sqlite3']);

/** @type {import('esbuild').Plugin} */
const externalsAsRequire = {
  name: 'externals-as-require',
  setup(build) {
    build.onResolve({ filter: /^[a-z0-9_:/-]+$/ }, (args) => {
      if (args.kind !== 'import-statement' || !(isBuiltin(args.path) || REQUIRED_EXTERNALS.has(args.path))) return undefined;
      // One stand-in per importer, so that it lands in the importer's chunk: shared, it would
      // be a chunk of its own, one more file to load.
      return { path: `${args.path}?from=${relative(process.cwd(), args.importer)}`, namespace: 'required', pluginData: args.path };
    });
    build.onLoad({ filter: /.*/, namespace: 'required' }, (args) => ({
      contents: `module.exports = require(${JSON.stringify(args.pluginData)});`,
      loader: 'js',
    }));
  },
};

rmSync('dist/cli/chunks', { recursive: true, force: true }); // no stale chunks
await build({
  entryPoints: ['dist/cli/main.js'],
  outdir: 'dist/cli',
  allowOverwrite: true,
  bundle: true,
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
  format: 'esm',
  platform: 'node',
  target: 'node20',
  banner: { js: banner },
  // typescript: only oclif's development mode asks for it (bin/dev.js), and it copes without;
  // selfsigned: loaded only to make a certificate, and its CommonJS exports stay as Node reads them.
  external: ['better-sqlite3', 'pg-native', 'fsevents', 'typescript', 'selfsigned'],
  plugins: [deferModules, externalsAsRequire],
  logLevel: 'warning',
});
