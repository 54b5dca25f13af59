'use strict';
/**
 * Loads the CLI bundle (a CommonJS file) as `require` would, but compiled with V8's code cache,
 * which Node 20 offers for scripts (`vm.Script` `cachedData`) and not for ES modules: a start
 * then deserialises the functions an earlier start compiled instead of parsing and compiling
 * ~3 MB of JavaScript again.
 *
 * The cache is `<bundle>.cache`: a header (magic, CRC-32 and length of the bundle it was made
 * from, SHA-256 of the V8 data that follows) and V8's data. V8 checks that data only against its
 * version, its flags and the source's length, and trusts the rest: a damaged byte can crash the
 * process (SIGSEGV) or change what a function does. So the data is used only when its own
 * SHA-256 matches the header's; a cache that does not fit, or is damaged, is deleted and another
 * written when the process exits (atomically, by rename). Where the directory is read-only, every
 * start simply compiles. `npm run build` makes it (scripts/code-cache.js). The module is
 * registered in `require.cache` like any other, so that oclif, which imports the package's
 * commands from the same file, finds this instance. (Whoever can write the cache file can write
 * the bundle beside it too: the digest guards against damage and stale files, not against the
 * owner of the installation.)
 */
const fs = require('node:fs');
const path = require('node:path');
const vm = require('node:vm');
const zlib = require('node:zlib');
const crypto = require('node:crypto');
const Module = require('node:module');

const MAGIC = 0x32636b74; // "tkc2": with the digest of the V8 data
const DIGEST_BYTES = 32;
const HEADER_BYTES = 12 + DIGEST_BYTES;

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
    const data = cache.subarray(HEADER_BYTES);
    if (fits && sha256(data).equals(cache.subarray(12, HEADER_BYTES))) cachedData = data;
    // Not this bundle's, or damaged: never used, and removed so that no other start reads it.
    else if (crc !== undefined) fs.rmSync(cacheFile, { force: true });
  } catch {
    // no cache yet, or one we may not remove: compiled from the source
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
    const data = script.createCachedData();
    const header = Buffer.alloc(HEADER_BYTES);
    header.writeUInt32LE(MAGIC, 0);
    header.writeUInt32LE(crc, 4);
    header.writeUInt32LE(length, 8);
    sha256(data).copy(header, 12);
    fs.writeFileSync(temporary, Buffer.concat([header, data]), { mode: 0o644 });
    fs.renameSync(temporary, cacheFile);
  } catch {
    // A directory we may not write to: the next start compiles again, as without a cache.
    fs.rmSync(temporary, { force: true });
  }
}

function sha256(bytes) {
  return crypto.createHash('sha256').update(bytes).digest();
}

module.exports = { loadBundle };
