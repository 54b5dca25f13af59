'use strict';
/**
 * Preloaded into a server under test (`node bench/memory.js --no-probe
 * '--node-args=--require bench/lib/heap-sample.cjs'`): a sampling heap profile, through the
 * process's own inspector session, of what it allocates from HEAP_SAMPLE_START_MS to
 * HEAP_SAMPLE_STOP_MS after it starts (default 2000 to 5500). HEAP_SAMPLE_MODE `major` (the
 * default) keeps what is still live or was collected by a mark-compact, so what reached the old
 * generation: the garbage that grows RSS; `all` keeps every allocation, to compare with. Written
 * to HEAP_SAMPLE_OUT.<pid>.<thread>.heapprofile (Chrome DevTools opens it), one per thread.
 */
const inspector = require('node:inspector');
const fs = require('node:fs');
const { threadId } = require('node:worker_threads');

const out = `${process.env.HEAP_SAMPLE_OUT ?? 'heap-sample'}.${process.pid}.${threadId}.heapprofile`;
const mode = process.env.HEAP_SAMPLE_MODE ?? 'major';
const session = new inspector.Session();
session.connect();
const fail = (err) => err && fs.writeFileSync(`${out}.error`, String(err));

setTimeout(() => {
  session.post('HeapProfiler.enable', (err) => {
    if (err) return fail(err);
    const options = { samplingInterval: 4096, includeObjectsCollectedByMajorGC: mode !== 'live', includeObjectsCollectedByMinorGC: mode === 'all' };
    session.post('HeapProfiler.startSampling', options, fail);
  });
}, Number(process.env.HEAP_SAMPLE_START_MS ?? 2000)).unref();

setTimeout(() => {
  session.post('HeapProfiler.stopSampling', (err, result) => (err ? fail(err) : fs.writeFileSync(out, JSON.stringify(result.profile))));
}, Number(process.env.HEAP_SAMPLE_STOP_MS ?? 5500)).unref();
