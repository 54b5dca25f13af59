'use strict';
/**
 * Preloaded into a server under test (`node --require bench/lib/memory-probe.cjs …`, by
 * bench/memory.js): every 100 ms it reads its own resident memory, and whenever that reaches a
 * new peak (by 1 MB or more) it writes, to the file named by TOKENCTL_MEMORY_PROBE, what the peak
 * is made of: V8's heap spaces (resident), Node's `external` and `arrayBuffers`, and the
 * process's mappings from /proc/self/smaps grouped by kind (the executable and other files,
 * glibc's main heap, 64 MiB thread arenas, shared memory such as SQLite's -shm, other anonymous
 * memory). Only /proc and V8's own figures are read: nothing of the server's state.
 */
const fs = require('node:fs');
const v8 = require('node:v8');
const { setInterval } = require('node:timers');
const { monitorEventLoopDelay } = require('node:perf_hooks');

/** How long the event loop was held: what keeps a request's objects alive across scavenges. */
const delay = monitorEventLoopDelay({ resolution: 10 });

const out = process.env.TOKENCTL_MEMORY_PROBE;
const MB = 1024 * 1024;
let peak = 0;

/** Resident kB by kind of mapping, from /proc/self/smaps. */
function mappings() {
  const text = fs.readFileSync('/proc/self/smaps', 'utf8');
  const kinds = {};
  const add = (kind, kb) => (kinds[kind] = (kinds[kind] ?? 0) + kb);
  let name = '';
  let sizeKb = 0;
  let perms = '';
  let start = 0;
  let lastArenaEnd = -1;
  for (const line of text.split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      start = parseInt(head[1], 16);
      sizeKb = (parseInt(head[2], 16) - start) / 1024;
      perms = head[3];
      name = head[4];
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (!rss) continue;
    const kb = Number(rss[1]);
    if (kb === 0) continue;
    let kind;
    if (name === '[heap]') kind = 'malloc_main_heap';
    else if (name === '[stack]') kind = 'stack';
    else if (name.startsWith('/dev/shm') || name.endsWith('-shm') || name.includes('(deleted)')) kind = 'shared:' + name.split('/').pop();
    else if (name.startsWith('/')) kind = /\/node$/.test(name) ? 'file:node' : 'file:other';
    else if (name === '') {
      // A glibc thread arena is a 64 MiB reservation (HEAP_MAX_SIZE), of which the part in use is
      // rw-p and the rest ---p, aligned to 64 MiB.
      const aligned = start % (64 * MB) === 0;
      kind = perms.startsWith('rw') && (aligned || start === lastArenaEnd) && sizeKb <= 65536 ? 'anon_64mib_aligned' : 'anon_other';
      if (kind === 'anon_64mib_aligned') lastArenaEnd = start + sizeKb * 1024;
    } else kind = 'other:' + name;
    add(kind, kb);
  }
  return Object.fromEntries(Object.entries(kinds).map(([k, v]) => [k, +(v / 1024).toFixed(1)]));
}

function sample() {
  const rss = process.memoryUsage.rss();
  if (rss < peak + MB) return;
  peak = rss;
  const mu = process.memoryUsage();
  const spaces = Object.fromEntries(v8.getHeapSpaceStatistics().map((s) => [s.space_name, { resident_mb: +(s.physical_space_size / MB).toFixed(1), used_mb: +(s.space_used_size / MB).toFixed(1) }]));
  const status = fs.readFileSync('/proc/self/status', 'utf8');
  const kb = (field) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN) / 1024;
  const report = {
    at: Date.now(),
    uptime_ms: Math.round(process.uptime() * 1000),
    rss_mb: +(rss / MB).toFixed(1),
    rss_anon_mb: kb('RssAnon'),
    rss_file_mb: kb('RssFile'),
    rss_shmem_mb: kb('RssShmem'),
    loop_delay_max_ms: +(delay.max / 1e6).toFixed(1),
    loop_delay_p99_ms: +(delay.percentile(99) / 1e6).toFixed(1),
    threads: Number(/Threads:\s+(\d+)/.exec(status)?.[1]),
    heap_total_mb: +(mu.heapTotal / MB).toFixed(1),
    heap_used_mb: +(mu.heapUsed / MB).toFixed(1),
    v8_resident_mb: +(Object.values(spaces).reduce((s, x) => s + x.resident_mb, 0)).toFixed(1),
    external_mb: +(mu.external / MB).toFixed(1),
    array_buffers_mb: +(mu.arrayBuffers / MB).toFixed(1),
    spaces,
    mappings: mappings(),
  };
  try {
    fs.writeFileSync(out, JSON.stringify(report) + '\n', { flag: 'a' });
  } catch {
    // no file to write: nothing to report to
  }
}

// The main thread only: a worker thread (the store's checkpointer) loads it too, with a heap of its own.
if (out && require('node:worker_threads').isMainThread) {
  delay.enable();
  setInterval(sample, 100).unref();
}
