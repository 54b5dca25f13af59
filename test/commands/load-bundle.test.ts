import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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
    // Compared by content: a cache removed and written again may get the same inode back.
    const before = existsSync(`${bundle}.cache`) ? readFileSync(`${bundle}.cache`) : null;
    const script = `
      const { loadBundle } = require(${JSON.stringify(LOADER)});
      const loaded = loadBundle(${JSON.stringify(bundle)});
      if (require(${JSON.stringify(bundle)}) !== loaded) throw new Error('require() gave another instance');
      loaded.answer().then((a) => process.stdout.write(a));`;
    const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const after = existsSync(`${bundle}.cache`) ? readFileSync(`${bundle}.cache`) : null;
    return { answer: r.stdout, cacheWritten: after !== null && (before === null || !after.equals(before)) };
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
    expect(cache.readUInt32LE(0)).toBe(0x32636b74);
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

  it('a cache with bytes flipped anywhere in V8\'s data is never used: every start works, and the cache is rebuilt', () => {
    // Enough compiled functions that V8's data is large, and an answer that depends on all of them.
    const functions = Array.from({ length: 200 }, (_, i) => `function f${i}(x) { return (x * ${i + 3}) % 1000003 + ${i}; }`).join('\n');
    const calls = Array.from({ length: 200 }, (_, i) => `f${i}`).join(', ');
    writeFileSync(bundle, `${functions}\nmodule.exports = { answer: async () => String([${calls}].reduce((n, f) => f(n), 7)) };\n`);
    const expected = load().answer;
    const good = readFileSync(`${bundle}.cache`);
    expect(good.length).toBeGreaterThan(2000);
    for (const at of [0.1, 0.25, 0.4, 0.5, 0.6, 0.75, 0.9]) {
      const damaged = Buffer.from(good);
      const offset = 44 + Math.floor((damaged.length - 52) * at);
      for (let i = 0; i < 8; i++) damaged[offset + i] = damaged[offset + i]! ^ 0xff;
      writeFileSync(`${bundle}.cache`, damaged);
      expect(load()).toEqual({ answer: expected, cacheWritten: true });
      expect(readFileSync(`${bundle}.cache`).subarray(44).equals(damaged.subarray(44))).toBe(false);
    }
    // A digest that does not match its data (or a header of another format): the same.
    const forged = Buffer.from(good);
    forged[20] = forged[20]! ^ 0x01;
    writeFileSync(`${bundle}.cache`, forged);
    expect(load()).toEqual({ answer: expected, cacheWritten: true });
  });

  it('the build made a cache for the CLI bundle that fits it', () => {
    const cli = join(ROOT, 'dist/main/index.cjs');
    const cache = readFileSync(`${cli}.cache`);
    expect(cache.readUInt32LE(0)).toBe(0x32636b74);
    expect(cache.readUInt32LE(8)).toBe(readFileSync(cli).length);
  });
});
