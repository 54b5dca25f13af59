#!/usr/bin/env node
// `tokenctl`: the CLI bundle (dist/main/index.cjs, made by `npm run build` from src/main/index.ts).
import { createRequire } from 'node:module';

// Through require: the bundle is CommonJS.
const require = createRequire(import.meta.url);
await require('../dist/main/index.cjs').run(new URL('..', import.meta.url));
