#!/usr/bin/env node
/**
 * `node bench/lib/poll-worker.js URL AUTHORIZATION`: the benchmark's bare RFC 8936 receiver
 * (poll-loop.js) in a process of its own, started pinned by events.js `barePoller`. On SIGTERM it
 * stops and prints `result {"sets":N,"revocations":M}`; a failed poll exits 1 with the error.
 */
import { pollLoop } from './poll-loop.js';

const [url, authorization] = process.argv.slice(2);
if (!url || !authorization) {
  console.error('usage: node bench/lib/poll-worker.js URL AUTHORIZATION');
  process.exit(2);
}
const stop = pollLoop(url, authorization);
process.on('SIGTERM', () => {
  stop().then(
    (got) => process.stdout.write(`result ${JSON.stringify(got)}\n`, () => process.exit(0)),
    (err) => {
      console.error(err instanceof Error ? err.message : String(err));
      process.exit(1);
    },
  );
});
