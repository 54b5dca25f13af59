#!/usr/bin/env node
/**
 * Bundles the compiled CLI (dist/main/index.js: oclif and every command) with esbuild into one
 * CommonJS file, dist/main/index.cjs, so that `tokenctl <command>` reads one file instead of
 * resolving and compiling ~500 modules. CommonJS, because bin/run.js compiles it as a script
 * with V8's code cache (dist/main/index.cjs.cache, see scripts/code-cache.js), which Node 20 offers
 * for scripts only, not for ES modules. What only some commands need (the HTTP server,
 * PostgreSQL, prompts) is in the file but runs only when imported; with the code cache, V8 does
 * not even parse it then. Native and optional modules stay outside. (Stand-ins for modules oclif
 * loads but no command uses saved nothing measurable with the cache: removed.)
 */
import { rmSync, writeFileSync } from 'node:fs';
import { build } from 'esbuild';

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
  plugins: [importMetaUrl],
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
