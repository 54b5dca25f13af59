import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';

/** The man page the build writes from the command reference (scripts/man.js): every command, and valid roff. */
describe('the man page, dist/man/tokenctl.1', () => {
  const page = () => readFileSync(join(ROOT, 'dist/man/tokenctl.1'), 'utf8');

  it('is what package.json names as its man page, and has a section for every command', () => {
    const pjson = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { man: string };
    expect(pjson.man).toBe('./dist/man/tokenctl.1');
    const manifest = JSON.parse(readFileSync(join(ROOT, 'oclif.manifest.json'), 'utf8')) as { commands: Record<string, unknown> };
    const headings = [...page().matchAll(/^\.SS "tokenctl (.+)"$/gm)].map((m) =>
      m[1]!
        .replace(/\\-/g, '-')
        .split(' ')
        .filter((w) => /^[a-z-]+$/.test(w)) // the id's words, not its ARGUMENTS
        .join(':'),
    );
    expect(headings.sort()).toEqual(Object.keys(manifest.commands).sort());
    expect(page()).toMatch(/^\.TH TOKENCTL 1 /);
    expect(page()).toContain('\\-\\-db');
  });

  it.skipIf(spawnSync('groff', ['--version']).status !== 0)('renders without a warning (groff -man -ww)', () => {
    const r = spawnSync('groff', ['-man', '-ww', '-z', join(ROOT, 'dist/man/tokenctl.1')], { encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(r.stderr).toBe('');
  });
});
