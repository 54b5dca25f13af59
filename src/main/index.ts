/**
 * tokenctl's start-up, the top of the layers: nothing imports this folder, and it imports the
 * commands, the CLI and (lazily) the server. This file is what the build bundles
 * (scripts/bundle.js → dist/main/index.cjs) and what both launchers start:
 *
 *   bin/run.js      `tokenctl …`: loads the bundle (bin/load-bundle.cjs) and calls `run`
 *   bin/worker.js   a worker of `serve --workers N`: the same bundle, `startWorkerProcess`
 *   bin/dev.js      development: `run` from the TypeScript sources, no build
 *
 * The start-up devices, each kept because `node bench/startup.js` shows it saves CPU at start:
 * - the bundle (scripts/bundle.js): one file instead of ~500 modules resolved one by one;
 * - its V8 code cache (bin/load-bundle.cjs, made by scripts/code-cache.js at build time);
 * - the root plugin (main/root-plugin.ts): oclif's configuration from what the bundle holds.
 */
export { COMMANDS } from '../commands/index.js';
export { run } from './cli.js';

/** A worker process of `serve --workers N` (bin/worker.js); the server's code loads only then. */
export async function startWorkerProcess(): Promise<void> {
  const { startWorkerProcess: start } = await import('../serve/worker.js');
  start();
}
