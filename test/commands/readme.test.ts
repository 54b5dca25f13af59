import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const OCLIF = join(ROOT, 'node_modules', 'oclif', 'bin', 'run.js');

/** The part of a README between oclif's command markers. */
function commandSection(readme: string): string {
  // Markers on lines of their own: oclif's own log line also names the first one.
  const start = readme.indexOf('\n<!-- commands -->\n');
  const end = readme.indexOf('\n<!-- commandsstop -->');
  expect(start, 'README.md has the <!-- commands --> marker').toBeGreaterThanOrEqual(0);
  expect(end, 'README.md has the <!-- commandsstop --> marker').toBeGreaterThan(start);
  return readme.slice(start, end);
}

describe('the README command reference', () => {
  it('is what `npm run readme` generates from the commands now (run it after changing a command)', async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [OCLIF, 'readme', '--dry-run', '--no-source-links', '--tsconfig-path', 'tsconfig.build.json'],
      { cwd: ROOT, env: { ...process.env, NO_COLOR: '1', OCLIF_SKIP_UPDATE_CHECK: '1' }, maxBuffer: 16 * 1024 * 1024 },
    );
    const generated = commandSection(stdout);
    expect(generated).toContain('tokenctl introspect');
    expect(commandSection(readFileSync(join(ROOT, 'README.md'), 'utf8'))).toBe(generated);
  });
});
