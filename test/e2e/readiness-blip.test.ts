import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { startServe, stopServe, type ServeProcess } from '../helpers/load.js';
import { dropSchema, PG_SKIP_MESSAGE, PG_URL, TcpProxy, testSchemaName } from '../helpers/pg.js';

/**
 * The issue's first check, on real processes: a 0.2 s database blip (every connection cut, new
 * ones refused, then the database back) takes no node out of readiness for more than 1 s after
 * the database is back, and liveness never fails, although requests met the blip. Three serve
 * nodes on one PostgreSQL schema, each through the same proxy on 127.0.0.1, probed every 20 ms
 * as a load balancer would.
 */

if (!PG_URL) {
  console.warn(PG_SKIP_MESSAGE);
  it.skip(PG_SKIP_MESSAGE, () => undefined);
}

const NODES = 3;
const BLIP_MS = 200;
/** Ready answers in a row, each a read of the store, that a node gives after the return before probing ends. */
const STREAK = 10;

describe.skipIf(!PG_URL)('readiness through a database blip', { timeout: 60_000 }, () => {
  const schema = testSchemaName();
  const pg = new URL(PG_URL ?? 'postgres://127.0.0.1:5432/none');
  const proxy = new TcpProxy(pg.hostname || '127.0.0.1', Number(pg.port || 5432));
  const nodes: ServeProcess[] = [];

  beforeAll(async () => {
    const direct = `${PG_URL}${PG_URL!.includes('?') ? '&' : '?'}schema=${schema}`;
    await (await PostgresStore.open(direct)).close();
    await proxy.start();
    for (let i = 0; i < NODES; i++) nodes.push(await startServe(['--db', proxy.rewrite(direct), '--node', `n${i}`, '--log-level', 'error']));
  }, 60_000);
  afterAll(async () => {
    await Promise.all(nodes.map((n) => stopServe(n)));
    await proxy.stop();
    if (PG_URL) await dropSchema(PG_URL, schema);
  }, 30_000);

  const status = (node: ServeProcess, path: string): Promise<number> =>
    fetch(node.url + path, { signal: AbortSignal.timeout(10_000) }).then(
      (r) => r.arrayBuffer().then(() => r.status),
      () => 0,
    );

  it(`a ${BLIP_MS} ms blip: every node ready again within 1 s of the database's return; live throughout`, async () => {
    for (const n of nodes) expect(await status(n, '/health/ready')).toBe(200);
    let back = 0;
    let probing = true;
    const lastNotReady = new Array<number>(NODES).fill(0);
    const readyInARow = new Array<number>(NODES).fill(0);
    const liveFailures: number[] = [];
    // Requests meet the blip too (each reads the store for its client): a node must not remember that.
    const requests = nodes.map(async (n) => {
      while (probing) {
        await fetch(n.url + '/oauth/introspection', {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: 'token=x&client_id=nobody&client_secret=wrong-secret-12',
          signal: AbortSignal.timeout(10_000),
        }).then((r) => r.arrayBuffer(), () => undefined);
      }
    });
    const probes = nodes.map(async (n, i) => {
      while (probing) {
        const sent = Date.now();
        const [ready, live] = await Promise.all([status(n, '/health/ready'), status(n, '/health/live')]);
        if (ready !== 200) lastNotReady[i] = Date.now();
        // A streak counts only probes sent after the return.
        if (back > 0 && sent >= back) readyInARow[i] = ready === 200 ? readyInARow[i]! + 1 : 0;
        if (live !== 200) liveFailures.push(live);
        await new Promise((r) => setTimeout(r, 20));
      }
    });
    await new Promise((r) => setTimeout(r, 100));
    await proxy.stop(); // every connection cut, new ones refused
    await new Promise((r) => setTimeout(r, BLIP_MS));
    await proxy.start();
    back = Date.now();
    // Probed for the 1 s the assertion allows, and on until every node has stayed ready STREAK
    // probes (requests meeting the store all along); a node that is not ready within 10 s stops
    // it too, and fails below.
    const watching = () => Date.now() - back < 1_000 || readyInARow.some((n) => n < STREAK);
    while (watching() && Date.now() - back < 10_000) await new Promise((r) => setTimeout(r, 20));
    probing = false;
    await Promise.all([...probes, ...requests]);
    const outAfterBack = lastNotReady.map((t) => Math.max(0, t - back));
    console.log(`[blip] not ready after the database was back, per node: ${outAfterBack.map((ms) => `${ms}ms`).join(' ')}`);
    expect(lastNotReady.some((t) => t > 0)).toBe(true); // the blip was seen: the test can fail
    for (const ms of outAfterBack) expect(ms).toBeLessThan(1_000);
    expect(liveFailures).toEqual([]);
    for (const n of nodes) expect(await status(n, '/health/ready')).toBe(200);
  });
});
