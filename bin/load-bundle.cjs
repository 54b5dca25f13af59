'use strict';
/**
 * Loads the CLI bundle (a CommonJS file) as `require` would, but compiled with V8's code cache,
 * which Node 20 offers for scripts (`vm.Script` `cachedData`) and not for ES modules: a start
 * then deserialises the functions an earlier start compiled instead of parsing and compiling
 * ~3 MB of JavaScript again.
 *
 * The cache is `<bundle>.cache`: a header (magic, CRC-32 and length of the bundle it was made
 * from) and V8's data, which V8 itself checks against its version and flags. A cache that does
 * not fit is not used; one is then written when the process exits (atomically, by rename), and
 * where the directory is read-only, every start simply compiles. `npm run build` makes it
 * (scripts/code-cache.js). The module is registered in `require.cache` like any other, so that
 * oclif, which imports the package's commands from the same file, finds this instance.
 */
const fs = require('node:fs');
const path = require('node:path');
const vm = require('node:vm');
const zlib = require('node:zlib');
const Module = require('node:module');

const MAGIC = 0x63636b74; // "tkcc"
const HEADER_BYTES = 12;

/** The exports of the CommonJS file `file` (an absolute path). */
function loadBundle(file) {
  const source = fs.readFileSync(file);
  // Node before 20.15 has no zlib.crc32: no cache then, the same code compiled at each start.
  const crc = typeof zlib.crc32 === 'function' ? zlib.crc32(source) : undefined;
  const cacheFile = `${file}.cache`;
  let cachedData;
  try {
    const cache = crc === undefined ? Buffer.alloc(0) : fs.readFileSync(cacheFile);
    const fits = cache.length > HEADER_BYTES && cache.readUInt32LE(0) === MAGIC && cache.readUInt32LE(4) === crc && cache.readUInt32LE(8) === source.length;
    if (fits) cachedData = cache.subarray(HEADER_BYTES);
  } catch {
    // no cache yet
  }

  // The wrapper Node gives every CommonJS module, and `__tokenctlImport` for the bundle's
  // dynamic imports (scripts/bundle.js rewrites them): in Node 20 an `import()` inside a script
  // compiled from a code cache finds no module loader. esbuild writes ASCII only, so latin1 reads it as is.
  const wrapped = `(function (exports, require, module, __filename, __dirname, __tokenctlImport) {${source.toString('latin1')}\n})`;
  const script = new vm.Script(wrapped, { filename: file, cachedData });
  const mod = new Module(file, module);
  const requireFromFile = Module.createRequire(file);
  mod.filename = file;
  mod.paths = requireFromFile.resolve.paths('tokenctl') ?? [];
  require.cache[file] = mod;
  try {
    script.runInThisContext().call(mod.exports, mod.exports, requireFromFile, mod, file, path.dirname(file), importModule);
  } catch (error) {
    delete require.cache[file];
    throw error;
  }
  mod.loaded = true;
  if (crc !== undefined && (cachedData === undefined || script.cachedDataRejected)) {
    // At exit, so that the cache also holds the functions this command compiled as it ran.
    process.once('exit', () => writeCache(script, cacheFile, crc, source.length));
  }
  return mod.exports;
}

/** `import()` for the bundle: absolute file URLs (oclif's plugins) and this package's dependencies. */
function importModule(specifier) {
  return import(specifier);
}

function writeCache(script, cacheFile, crc, length) {
  const temporary = `${cacheFile}.${process.pid}.tmp`;
  try {
    const header = Buffer.alloc(HEADER_BYTES);
    header.writeUInt32LE(MAGIC, 0);
    header.writeUInt32LE(crc, 4);
    header.writeUInt32LE(length, 8);
    fs.writeFileSync(temporary, Buffer.concat([header, script.createCachedData()]), { mode: 0o644 });
    fs.renameSync(temporary, cacheFile);
  } catch {
    // A directory we may not write to: the next start compiles again, as without a cache.
    fs.rmSync(temporary, { force: true });
  }
}

module.exports = { loadBundle };
