#!/usr/bin/env node
// A worker of `tokenctl serve --workers N` (node:cluster starts it): the same bundle as the CLI.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
await require('../dist/main/index.cjs').startWorkerProcess();
