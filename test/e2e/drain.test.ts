import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/engine.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import { killAllChildren, startServe, SystemTimeClock, tempDir, type ServeProcess } from '../helpers/load.js';

/**
 * Contract 6's drain, on a real `serve` process under load on 127.0.0.1: a client that stops
 * sending once `/health/ready` answers 503, as a load balancer does, loses no request (no
 * connection error, no non-200) to a SIGTERM; one that keeps sending a little longer is still
 * answered during the drain; the process exits 0 once the drain is over. Without the drain, the
 * same client does lose requests: the test can fail. `--drain 1s` keeps it short.
 */

const DRAIN_MS = 1_000;
const CONCURRENCY = 16;
const SECRET = 'drain-test-secret-0123456789';

interface LoadResult {
  ok: number;
  /** Answers other than 200, and requests that got no answer (refused, reset). */
  lost: number;
  errors: string[];
  /** Requests sent after readiness turned 503, by a client that ignores it for a while: all answered? */
  lateOk: number;
  /** From the signal to readiness seen 503, and to the process's exit. */
  notReadyAfterMs: number;
  exitedAfterMs: number;
  exit: { code: number | null; signal: NodeJS.Signals | null };
}

describe('serve: SIGTERM drains under load', { timeout: 60_000 }, () => {
  const tmp = tempDir('tokenctl-drain-');
  const db = join(tmp.dir, 'tokens.db');
  let token = '';

  beforeAll(async () => {
    const store = await SqliteStore.open(db);
    try {
      const engine = new Engine({ store, clock: new SystemTimeClock() });
      await engine.createClient({ id: 'lb-client', name: 'lb-client', secret: SECRET }, 'cli:test');
      token = (await engine.issue({ clientId: 'lb-client', username: 'alice' })).access_token;
    } finally {
      await store.close();
    }
  });
  afterAll(async () => {
    await killAllChildren();
    tmp.cleanup();
  });

  const form = (): string => new URLSearchParams({ token, client_id: 'lb-client', client_secret: SECRET }).toString();

  async function introspect(url: string): Promise<number> {
    const res = await fetch(url + '/oauth/introspection', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form(),
      signal: AbortSignal.timeout(10_000),
    });
    const body = (await res.json()) as { active?: boolean };
    return res.status === 200 && body.active === true ? 200 : res.status;
  }

  /** Load on `serve`, a SIGTERM by `signal()`, and a client that honours readiness. */
  async function loadThroughSignal(serve: ServeProcess, signal: () => Promise<{ code: number | null; signal: NodeJS.Signals | null }>): Promise<LoadResult> {
    const result = { ok: 0, lost: 0, errors: [] as string[], lateOk: 0 };
    let notReady = false;
    const record = (status: number | Error): void => {
      if (status === 200) result.ok++;
      else {
        result.lost++;
        if (result.errors.length < 5) result.errors.push(String(status));
      }
    };
    // Warm: every worker has verified the secret once before the load starts.
    for (let i = 0; i < 8; i++) record(await introspect(serve.url).catch((e: Error) => e));
    const loops = Array.from({ length: CONCURRENCY }, async () => {
      while (!notReady) record(await introspect(serve.url).catch((e: Error) => e));
    });
    // The load balancer: probes readiness every 20 ms, and stops sending at the first 503.
    const probing = (async () => {
      while (!notReady) {
        const status = await fetch(serve.url + '/health/ready', { signal: AbortSignal.timeout(5_000) }).then(
          (r) => r.status,
          (e: Error) => (record(e), 0),
        );
        // A refused probe counts as down too (and as lost: a draining node must never refuse).
        if (status === 503 || status === 0) notReady = true;
        else await new Promise((r) => setTimeout(r, 20));
      }
    })();
    await new Promise((r) => setTimeout(r, 200));
    const signalled = Date.now();
    const exited = signal();
    await probing;
    const notReadyAfterMs = Date.now() - signalled;
    await Promise.all(loops);
    // A client that has not heard yet: sent after the 503, still answered while the node drains.
    for (let i = 0; i < 5; i++) if ((await introspect(serve.url).catch(() => 0)) === 200) result.lateOk++;
    const exit = await exited;
    return { ...result, notReadyAfterMs, exitedAfterMs: Date.now() - signalled, exit };
  }

  function expectDrained(r: LoadResult): void {
    console.log(`[drain] ok=${r.ok} lost=${r.lost} late_ok=${r.lateOk} not_ready_after=${r.notReadyAfterMs}ms exited_after=${r.exitedAfterMs}ms`);
    expect(r.errors).toEqual([]);
    expect(r.lost).toBe(0);
    expect(r.ok).toBeGreaterThan(CONCURRENCY);
    expect(r.lateOk).toBe(5);
    expect(r.notReadyAfterMs).toBeLessThan(DRAIN_MS);
    expect(r.exitedAfterMs).toBeGreaterThanOrEqual(DRAIN_MS - 50);
    expect(r.exit).toEqual({ code: 0, signal: null });
  }

  it('one process: readiness 503 at once, requests served for --drain, then exit 0; nothing lost', async () => {
    const serve = await startServe(['--db', db, '--log-level', 'warn', '--drain', '1s']);
    const r = await loadThroughSignal(serve, () => serve.kill('SIGTERM'));
    expectDrained(r);
    expect(serve.stderr()).toMatch(/SIGTERM: not ready; serving 1000 ms more/);
  });

  it('--workers 2, SIGTERM to the primary alone (Kubernetes): every worker drains; nothing lost', async () => {
    const serve = await startServe(['--db', db, '--log-level', 'warn', '--drain', '1s', '--workers', '2'], { processGroup: true });
    expectDrained(await loadThroughSignal(serve, () => serve.kill('SIGTERM')));
  });

  it('--workers 2, SIGTERM to the whole process group (systemd): every worker drains; nothing lost', async () => {
    const serve = await startServe(['--db', db, '--log-level', 'warn', '--drain', '1s', '--workers', '2'], { processGroup: true });
    expectDrained(await loadThroughSignal(serve, () => serve.killGroup('SIGTERM')));
  });

  it.each([1, 2])('a second SIGTERM ends a 60 s drain at once (--workers %i), exit 0', async (workers) => {
    const serve = await startServe(['--db', db, '--log-level', 'warn', '--drain', '60s', '--workers', String(workers)], { processGroup: true });
    const signalled = Date.now();
    serve.child.kill('SIGTERM');
    let ready = 200;
    while (ready === 200 && Date.now() - signalled < 5_000) ready = (await fetch(serve.url + '/health/ready')).status;
    expect(ready).toBe(503);
    expect(await introspect(serve.url)).toBe(200); // still serving
    const exit = await serve.kill('SIGTERM');
    expect(exit).toEqual({ code: 0, signal: null });
    expect(Date.now() - signalled).toBeLessThan(10_000);
  });

  it('--drain 0 (the contrast): the same client loses requests, so the drain is what saves them', async () => {
    const serve = await startServe(['--db', db, '--log-level', 'warn', '--drain', '0s']);
    const r = await loadThroughSignal(serve, () => serve.kill('SIGTERM'));
    console.log(`[drain 0] ok=${r.ok} lost=${r.lost} late_ok=${r.lateOk}`);
    expect(r.exit).toEqual({ code: 0, signal: null });
    expect(r.lost + (5 - r.lateOk)).toBeGreaterThan(0);
  });
});
