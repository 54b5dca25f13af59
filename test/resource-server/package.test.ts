import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { BIN, ROOT } from '../helpers/cli.js';

/**
 * `tokenctl/resource-server` is a subpath of the package (package.json `exports`): importable by
 * that name once built, shipped by `npm pack`, with its types; the CLI's bin is unaffected.
 */
describe('the tokenctl/resource-server export', () => {
  it('imports by its package name (the built dist/)', () => {
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', "const m = await import('tokenctl/resource-server'); console.log(Object.keys(m).sort().join(','))"], { cwd: ROOT, encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.stdout.trim().split(',')).toEqual(expect.arrayContaining(['ResourceServer', 'resourceServer', 'IntrospectionUnavailable', 'writeRefusal', 'bearerToken']));
  });

  it('is in the package npm pack makes, with its declarations', () => {
    const r = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const files = (JSON.parse(r.stdout) as { files: { path: string }[] }[])[0]!.files.map((f) => f.path);
    expect(files).toEqual(expect.arrayContaining(['dist/resource-server/index.js', 'dist/resource-server/index.d.ts', 'bin/run.js']));
  });

  it('leaves the CLI as it was', () => {
    const r = spawnSync(process.execPath, [BIN, 'version'], { cwd: ROOT, encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^tokenctl \d/);
  });
});
