// Runs the oclif developer CLI (oclif manifest, oclif readme) without its "update available"
// notice: builds print only what is wrong. Arguments are passed through.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const bin = require.resolve('oclif/bin/run.js');
const result = spawnSync(process.execPath, [bin, ...process.argv.slice(2)], {
  stdio: 'inherit',
  env: { ...process.env, OCLIF_SKIP_NEW_VERSION_CHECK: 'true' },
});
process.exit(result.status ?? 1);
