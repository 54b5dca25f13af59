import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT, runNode } from '../helpers/node-script.js';

/**
 * `serve --workers N`: a worker killed while the primary was handing it a connection (node:cluster
 * round-robin keeps the primary's copy of the socket until the worker acknowledges it) left that
 * client waiting, 20 s and more. Reproduced with a real cluster: a worker whose event loop is
 * busy (as under load) is handed a connection and killed; the client must see it closed at once.
 */
const dir = mkdtempSync(join(tmpdir(), 'tokenctl-handoff-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const workerFile = join(dir, 'worker.cjs');
writeFileSync(
  workerFile,
  `const http = require('node:http');
   const server = http.createServer((req, res) => res.end('ok')).listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
   process.on('message', (m) => { if (m === 'block') { const end = Date.now() + 30000; while (Date.now() < end) {} } });`,
);

/** Runs a primary with one worker; says how long the client's connection stayed open after the kill (or that it was still open after 1.5 s). */
const primary = (watch: boolean) => `
  import cluster from 'node:cluster';
  import { connect } from 'node:net';
  import { closeUnacknowledgedHandoffs } from ${JSON.stringify(join(ROOT, 'src/serve/handoff.ts'))};
  cluster.schedulingPolicy = cluster.SCHED_RR;
  // Not this -e script's own arguments: the worker runs the worker file alone.
  cluster.setupPrimary({ exec: ${JSON.stringify(workerFile)}, execArgv: [] });
  const worker = cluster.fork();
  if (${watch}) closeUnacknowledgedHandoffs(worker);
  worker.on('message', async ({ port }) => {
    worker.send('block');
    await new Promise((r) => setTimeout(r, 200));
    const client = connect(port, '127.0.0.1');
    client.on('error', () => undefined);
    client.on('connect', () => client.write('GET / HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n'));
    await new Promise((r) => setTimeout(r, 300)); // handed over, never acknowledged
    const killed = Date.now();
    worker.process.kill('SIGKILL');
    const closed = await Promise.race([new Promise((r) => client.on('close', () => r(Date.now() - killed))), new Promise((r) => setTimeout(() => r(null), 1500))]);
    console.log(JSON.stringify({ closedAfterMs: closed }));
    process.exit(0);
  });
`;

describe('a worker killed with a connection handed to it', { timeout: 30_000 }, () => {
  it.skipIf(process.platform === 'win32')('without the watch the client hangs (the finding); with it, its connection is closed at once', async () => {
    const results = [];
    for (const watch of [false, true]) {
      const r = await runNode(primary(watch), {});
      expect(r.code, r.stderr).toBe(0);
      results.push(JSON.parse(r.stdout.trim().split('\n').pop()!) as { closedAfterMs: number | null });
    }
    expect(results[0]!.closedAfterMs).toBeNull();
    expect(results[1]!.closedAfterMs).not.toBeNull();
    expect(results[1]!.closedAfterMs!).toBeLessThan(1000);
  });
});
