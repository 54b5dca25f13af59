import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';

const PACKAGE = join(ROOT, 'packages/resource-server');

/**
 * `@tokenctl/resource-server`, the module as its own package (packages/resource-server, built from
 * src/resource-server/): `npm pack` makes it, and an API installs it from the tarball with
 * nothing but jose, offline (jose's tarball is packed from this repository's node_modules, and
 * npm's cache is empty), and imports it by name.
 */
describe('the @tokenctl/resource-server package, packed and installed offline', () => {
  let dir: string;
  let api: string;
  let packed: { filename: string; files: { path: string }[] };
  let install: ReturnType<typeof spawnSync>;

  const npm = (args: string[], cwd: string) =>
    spawnSync('npm', args, { cwd, encoding: 'utf8', timeout: 120_000, env: { ...process.env, npm_config_cache: join(dir, 'npm-cache'), npm_config_offline: 'true', npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' } });

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'tokenctl-rs-package-'));
    const rs = npm(['pack', PACKAGE, '--pack-destination', dir, '--json'], ROOT);
    expect(rs.status, rs.stderr).toBe(0);
    packed = (JSON.parse(rs.stdout) as (typeof packed)[])[0]!;
    const jose = npm(['pack', join(ROOT, 'node_modules/jose'), '--pack-destination', dir, '--json'], ROOT);
    expect(jose.status, jose.stderr).toBe(0);
    const joseFile = (JSON.parse(jose.stdout) as { filename: string }[])[0]!.filename;
    api = join(dir, 'api');
    mkdirSync(api);
    writeFileSync(join(api, 'package.json'), JSON.stringify({ name: 'api', version: '1.0.0', private: true, type: 'module' }));
    install = npm(['install', '--ignore-scripts', join(dir, packed.filename), join(dir, joseFile)], api);
  });
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('holds the built module and its declarations, and nothing of the CLI', () => {
    const files = packed.files.map((f) => f.path).sort();
    expect(files).toEqual(expect.arrayContaining(['dist/index.js', 'dist/index.d.ts', 'dist/set-receiver.js', 'package.json', 'README.md']));
    expect(files.filter((f) => !f.startsWith('dist/') && f !== 'package.json' && f !== 'README.md')).toEqual([]);
    // Every module of src/resource-server/ is in it: the package is built from those sources.
    const sources = readdirSync(join(ROOT, 'src/resource-server')).filter((f) => f.endsWith('.ts')).map((f) => `dist/${f.replace(/\.ts$/, '.js')}`);
    expect(files).toEqual(expect.arrayContaining(sources));
  });

  it('installs offline with jose as its only dependency, and imports by its name', () => {
    expect(install.status, String(install.stderr)).toBe(0);
    const installed = readdirSync(join(api, 'node_modules')).filter((f) => !f.startsWith('.')).sort();
    expect(installed).toEqual(['@tokenctl', 'jose']);
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', "const m = await import('@tokenctl/resource-server'); console.log(Object.keys(m).sort().join(','))"], { cwd: api, encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.stdout.trim().split(',')).toEqual(expect.arrayContaining(['ResourceServer', 'resourceServer', 'IntrospectionUnavailable', 'writeRefusal', 'bearerToken']));
  });

  it("keeps tokenctl's version and jose range", () => {
    const root = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string; dependencies: Record<string, string> };
    const own = JSON.parse(readFileSync(join(PACKAGE, 'package.json'), 'utf8')) as { version: string; dependencies: Record<string, string> };
    expect(own.version).toBe(root.version);
    expect(own.dependencies).toEqual({ jose: root.dependencies.jose });
  });
});
