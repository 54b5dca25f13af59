#!/usr/bin/env node
// The bundled CLI (scripts/bundle.js): oclif and every command in one module.
import { execute } from '../dist/cli/main.js';

await execute({ dir: import.meta.url });
