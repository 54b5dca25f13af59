#!/usr/bin/env node
/**
 * Bundles the compiled CLI (dist/cli/main.js: oclif and every command) into one ES module with
 * esbuild, in place, so that `tokenctl <command>` reads one file instead of resolving and
 * compiling ~500 CommonJS modules. Code only some commands need (the HTTP server, PostgreSQL,
 * prompts) is imported lazily and lands in chunks loaded on use. Native and optional modules
 * stay outside.
 */
import { rmSync } from 'node:fs';
import { build } from 'esbuild';

const banner = [
  "import { createRequire as __tokenctlRequire } from 'node:module';",
  "import { fileURLToPath as __tokenctlPath } from 'node:url';",
  "import { dirname as __tokenctlDir } from 'node:path';",
  'const require = __tokenctlRequire(import.meta.url);',
  'const __filename = __tokenctlPath(import.meta.url);',
  'const __dirname = __tokenctlDir(__filename);',
].join('\n');

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
  logLevel: 'warning',
});
