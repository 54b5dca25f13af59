#!/usr/bin/env node
// Starts the CLI bundle (dist/main/index.cjs, scripts/bundle.js: oclif and every command) from
// V8's code cache (dist/main/index.cjs.cache, made by the build): compiled once, not at every start.
import { createRequire } from 'node:module';

// Built-ins through require: an ES import of one evaluates all its lazy exports (fs streams, …).
const require = createRequire(import.meta.url);
const { loadBundle } = require('./load-bundle.cjs');

await loadBundle(require.resolve('../dist/main/index.cjs')).run(new URL('..', import.meta.url));
