#!/usr/bin/env node
// The bundled CLI (scripts/bundle.js): oclif and every command in one module.
import { run } from '../dist/cli/main.js';

await run(new URL('..', import.meta.url));
