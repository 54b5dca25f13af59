import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';

const LOADER = join(ROOT, 'bin/load-bundle.cjs');

/**
 * bin/load-bundle.cjs on a small bundle of its own, each load in a new process (as every
 * command start is): the cache is written at exit when there is none or it does not fit, and
 * used otherwise.
 */
describe('the CLI bundle loader (V8 code cache)', () => {
  let dir: string;
  let bundle: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'tokenctl-load-bundle-'));
    bundle = join(dir, 'bundle.cjs');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** The bundle's `answer()` in a new process, after checking require() returns the loaded instance. */
  function load(): { answer: string; cacheWritten: boolean } {
    const before = existsSync(`${bundle}.cache`) ? statSync(`${bundle}.cache`).ino : null;
    const script = `
      const { loadBundle } = require(${JSON.stringify(LOADER)});
      const loaded = loadBundle(${JSON.stringify(bundle)});
      if (require(${JSON.stringify(bundle)}) !== loaded) throw new Error('require() gave another instance');
      loaded.answer().then((a) => process.stdout.write(a));`;
    const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const after = existsSync(`${bundle}.cache`) ? statSync(`${bundle}.cache`).ino : null;
    return { answer: r.stdout, cacheWritten: after !== null && after !== before };
  }

  // A dynamic import inside the bundle, through the loader's import function: in Node 20 a plain
  // import() in a script compiled from a code cache fails.
  const source = (word: string) => `module.exports = {
    answer: async () => (await __tokenctlImport('node:path')).basename(__filename) + ' ${word}',
  };\n`;

  it('writes the cache on the first start, uses it on the next, and loads the same answers either way', () => {
    writeFileSync(bundle, source('one'));
    expect(load()).toEqual({ answer: 'bundle.cjs one', cacheWritten: true });
    const cache = readFileSync(`${bundle}.cache`);
    expect(cache.readUInt32LE(0)).toBe(0x63636b74);
    expect(cache.readUInt32LE(8)).toBe(readFileSync(bundle).length);
    expect(load()).toEqual({ answer: 'bundle.cjs one', cacheWritten: false });
  });

  it('a cache made for another bundle is not used, even of the same length, and is replaced', () => {
    writeFileSync(bundle, source('one'));
    load();
    writeFileSync(bundle, source('two')); // same length, other content
    expect(load()).toEqual({ answer: 'bundle.cjs two', cacheWritten: true });
    expect(load()).toEqual({ answer: 'bundle.cjs two', cacheWritten: false });
  });

  it('a damaged cache is not used and is replaced', () => {
    writeFileSync(bundle, source('one'));
    load();
    const cache = readFileSync(`${bundle}.cache`);
    cache.fill(0x5a, 12); // header intact, V8's data garbage
    writeFileSync(`${bundle}.cache`, cache);
    expect(load()).toEqual({ answer: 'bundle.cjs one', cacheWritten: true });
  });

  it('the build made a cache for the CLI bundle that fits it', () => {
    const cli = join(ROOT, 'dist/cli/main.cjs');
    const cache = readFileSync(`${cli}.cache`);
    expect(cache.readUInt32LE(0)).toBe(0x63636b74);
    expect(cache.readUInt32LE(8)).toBe(readFileSync(cli).length);
  });
});
