import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const OCLIF = join(ROOT, 'node_modules', 'oclif', 'bin', 'run.js');
/** The generated command reference: `npm run readme` writes it, the README links to it. */
const REFERENCE = 'docs/commands.md';

/** The part of a page between oclif's command markers. */
function commandSection(page: string): string {
  // Markers on lines of their own: oclif's own log line also names the first one.
  const start = page.indexOf('\n<!-- commands -->\n');
  const end = page.indexOf('\n<!-- commandsstop -->');
  expect(start, `${REFERENCE} has the <!-- commands --> marker`).toBeGreaterThanOrEqual(0);
  expect(end, `${REFERENCE} has the <!-- commandsstop --> marker`).toBeGreaterThan(start);
  return page.slice(start, end);
}

describe('the command reference (docs/commands.md)', () => {
  it('is what `npm run readme` generates from the commands now (run it after changing a command)', async () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(pkg.scripts.readme, '`npm run readme` writes the reference page').toContain(`--readme-path ${REFERENCE}`);
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [OCLIF, 'readme', '--dry-run', '--no-source-links', '--tsconfig-path', 'tsconfig.build.json', '--readme-path', REFERENCE],
      { cwd: ROOT, env: { ...process.env, NO_COLOR: '1', OCLIF_SKIP_UPDATE_CHECK: '1' }, maxBuffer: 16 * 1024 * 1024 },
    );
    const generated = commandSection(stdout);
    expect(generated).toContain('tokenctl introspect');
    expect(commandSection(readFileSync(join(ROOT, REFERENCE), 'utf8'))).toBe(generated);
    expect(readFileSync(join(ROOT, 'README.md'), 'utf8'), 'the README keeps no copy of it').not.toContain('<!-- commands -->');
  });
});
