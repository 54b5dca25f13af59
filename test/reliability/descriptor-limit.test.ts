import { readdirSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { connectionCap, readDescriptors } from '../../src/serve/descriptor-limit.js';
import { startServe, stopServe, tempDir, type ServeProcess } from '../helpers/load.js';

/**
 * `serve --max-connections` against the open files limit (RLIMIT_NOFILE): a process past it fails
 * every accept and every file it opens (EMFILE), so new clients got resets while the cap said
 * 1000. The cap is now sized from the limit, leaving room for the store and the rest, and serve
 * says so at start.
 */
const LIMITS = (soft: string) => `Limit                     Soft Limit           Hard Limit           Units
Max processes             96365                96365                processes
Max open files            ${soft}                 1048576              files
Max locked memory         8388608              8388608              bytes
`;

describe('the connection cap from the descriptor limit', () => {
  it('reads the soft limit from /proc/self/limits, and nothing where there is none', () => {
    expect(readDescriptors(() => LIMITS('1024'), () => 12)).toEqual({ limit: 1024, open: 12 });
    expect(readDescriptors(() => LIMITS('unlimited'), () => 12)).toEqual({ limit: Infinity, open: 12 });
    expect(readDescriptors(() => { throw new Error('ENOENT'); }, () => 0)).toBeUndefined();
    // This process, on Linux: a real limit and a real count.
    const here = readDescriptors();
    if (here) expect(here.open).toBeGreaterThan(2);
  });

  it('keeps the default or the request when it fits, lowers it with a warning when it does not', () => {
    expect(connectionCap(undefined, { limit: 20_000, open: 20 }, 8)).toEqual({ maxConnections: 1000, note: expect.stringMatching(/^max connections: 1000 per process \(open files limit 20000, 92 kept/) });
    expect(connectionCap(undefined, { limit: 1024, open: 20 }, 8)).toMatchObject({ maxConnections: 932, note: expect.stringMatching(/the default 1000 needs a higher limit: raise it \(ulimit -n 1092/) });
    expect(connectionCap(5000, { limit: 1024, open: 20 }, 0)).toMatchObject({ maxConnections: 940, warning: expect.stringMatching(/--max-connections 5000 does not fit the open files limit 1024: lowered to 940/) });
    expect(connectionCap(5000, undefined)).toEqual({ maxConnections: 5000 });
    expect(connectionCap(10, { limit: 40, open: 30 })).toMatchObject({ maxConnections: 1 });
  });
});

describe('serve under a low open files limit', { timeout: 60_000 }, () => {
  let serve: ServeProcess | undefined;
  const sockets: Socket[] = [];
  afterEach(async () => {
    for (const s of sockets.splice(0)) s.destroy();
    if (serve) await stopServe(serve);
  });

  const openFiles = (pid: number) => readdirSync(`/proc/${pid}/fd`).length;

  it.skipIf(process.platform !== 'linux')('says the cap it runs with, and never runs out of descriptors however many clients connect', async () => {
    const tmp = tempDir('tokenctl-nofile-');
    try {
      serve = await startServe(['--db', join(tmp.dir, 'tokens.db'), '--max-connections', '1000', '--log-level', 'warn'], { nofile: 128 });
      // oclif wraps warnings: one line each again.
      const said = serve.stderr().replace(/\s*\n\s*›\s*/g, ' ');
      expect(said).toMatch(/--max-connections 1000 does not fit the open files limit 128: lowered to \d+/);
      const cap = Number(/lowered to (\d+)/.exec(said)![1]);
      expect(cap).toBeLessThan(128 - 20);
      expect(said).toMatch(new RegExp(`max connections: ${cap} per process \\(open files limit 128`));

      // Twice the limit of clients: the server closes those past its cap instead of failing accept.
      let peak = 0;
      for (let i = 0; i < 256; i++) {
        const s = connect(serve.port, '127.0.0.1');
        s.on('error', () => undefined);
        sockets.push(s);
        if (i % 32 === 31) {
          await new Promise((r) => setTimeout(r, 50));
          peak = Math.max(peak, openFiles(serve.child.pid!));
        }
      }
      await new Promise((r) => setTimeout(r, 200));
      peak = Math.max(peak, openFiles(serve.child.pid!));
      expect(peak).toBeLessThan(128);
      for (const s of sockets.splice(0)) s.destroy();
      // The store can still open what it needs, and a new client is served.
      await expect.poll(async () => (await fetch(`${serve!.url}/healthz`)).status, { timeout: 5000 }).toBe(200);
    } finally {
      tmp.cleanup();
    }
  });
});
