#!/usr/bin/env node
// A worker of `tokenctl serve --workers N` (node:cluster starts it): the same bundle as the CLI,
// from the same code cache (bin/load-bundle.cjs).
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { loadBundle } = require('./load-bundle.cjs');

await loadBundle(require.resolve('../dist/main/index.cjs')).startWorkerProcess();
