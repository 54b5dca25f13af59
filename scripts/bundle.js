#!/usr/bin/env node
/**
 * Bundles the compiled CLI (dist/main/index.js: oclif and every command, src/main/index.ts) with
 * esbuild into one CommonJS file, dist/main/index.cjs, so that `tokenctl <command>` reads one file
 * instead of resolving and compiling ~500 modules (bench/startup.js: ~90 ms of CPU of each start).
 * CommonJS, because most of what it bundles (oclif) is CommonJS and requires Node's built-ins as
 * it goes. What only some commands need (the HTTP server, PostgreSQL, prompts) is in the file but
 * runs only when imported. Native and optional modules stay outside.
 */
import { rmSync } from 'node:fs';
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

rmSync('dist/main/index.cjs.cache', { force: true }); // the V8 code cache of earlier builds, no longer read
await build({
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
