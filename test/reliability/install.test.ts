import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';

const require = createRequire(import.meta.url);
const semver = require('semver') as { minVersion(range: string): { version: string } | null; satisfies(v: string, range: string): boolean };

interface Lock {
  packages: Record<string, { engines?: { node?: string }; dev?: boolean; optional?: boolean }>;
}

/** A clean install on the oldest Node the package promises: no EBADENGINE. */
describe('installing', () => {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as Lock;
  const oldest = semver.minVersion(pkg.engines.node)!.version;

  it.each([
    ['every package (npm install in a clone installs the development tools too)', () => true],
    ['every runtime dependency', (p: Lock['packages'][string]) => !p.dev],
  ])('%s supports the oldest Node promised in package.json', (_what, include) => {
    const refusing = Object.entries(lock.packages)
      .filter(([name, p]) => name !== '' && include(p) && !p.optional && p.engines?.node && !semver.satisfies(oldest, p.engines.node))
      .map(([name, p]) => `${name} wants node ${p.engines!.node}`);
    expect(refusing, `Node ${oldest}`).toEqual([]);
  });

  it('the README promises the same Node version as package.json', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    expect(readme).toContain(`Node.js ${oldest.replace(/\.0$/, '')} or later`);
  });

  it('the build runs oclif without its "update available" notice', () => {
    const r = spawnSync(process.execPath, [join(ROOT, 'scripts/oclif.js'), '--help'], { encoding: 'utf8', cwd: ROOT, timeout: 30_000 });
    expect(r.status).toBe(0);
    expect(r.stdout + r.stderr).not.toMatch(/update available/i);
    expect(readFileSync(join(ROOT, 'package.json'), 'utf8')).toMatch(/"build": "[^"]*node scripts\/oclif\.js manifest/);
  });
});
