/**
 * The CLI as one module: oclif's `execute` and every command (oclif's "explicit" command
 * discovery, package.json `oclif.commands`). The build bundles this file with its dependencies
 * (scripts/bundle.js), so that a command starts by reading one file instead of resolving and
 * compiling some 500 CommonJS modules one by one. Commands import what only they need lazily.
 */
export { execute } from '@oclif/core';
export { COMMANDS } from '../commands/index.js';
