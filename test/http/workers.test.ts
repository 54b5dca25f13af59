import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/engine.js';
import type { TokenResponse } from '../../src/engine/results.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';

/**
 * `tokenctl serve --workers 2` as a real process (needs `npm run build`): one `listening on` line
 * once both workers listen, a revocation made through one connection is seen at once through
 * every other connection, whichever worker answers it, and SIGTERM stops everything with exit 0.
 */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const BIN = join(ROOT, 'bin/run.js');

let sandbox: string;
let child: ChildProcess | undefined;

function post(url: string, path: string, form: Record<string, string>, agent: Agent | false): Promise<{ status: number; json: Record<string, unknown> }> {
  const body = new URLSearchParams(form).toString();
  return new Promise((resolvePromise, reject) => {
    const req = request(
      url + path,
      { method: 'POST', agent, headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(body), ...(agent === false && { connection: 'close' }) } },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (d: string) => (text += d));
        res.on('end', () => resolvePromise({ status: res.statusCode ?? 0, json: JSON.parse(text) as Record<string, unknown> }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('tokenctl serve --workers 2 (real processes)', () => {
  let db: string;
  let secret: string;
  let tokens: TokenResponse;

  beforeAll(async () => {
    if (!existsSync(join(ROOT, 'dist/main/index.cjs')) || !existsSync(join(ROOT, 'oclif.manifest.json'))) {
      throw new Error('tokenctl is not built: run `npm run build` before these tests');
    }
    sandbox = mkdtempSync(join(tmpdir(), 'tokenctl-workers-'));
    db = join(sandbox, 'tokens.db');
    const store = await SqliteStore.open(db);
    const engine = new Engine({ store });
    secret = (await engine.createClient({ id: 'rs', name: 'rs', scope: 'read', orgId: 'org', audience: 'api' }, 'test')).client_secret!;
    tokens = await engine.issue({ clientId: 'rs', username: 'alice', scope: 'read' });
    await store.close();
  });
  afterAll(() => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    rmSync(sandbox, { recursive: true, force: true });
  });

  it('every worker sees a revocation at once, and SIGTERM stops them all with exit 0', async () => {
    child = spawn(process.execPath, [BIN, 'serve', '--workers', '2', '--port', '0', '--db', db, '--log-level', 'info'], {
      cwd: sandbox,
      env: { ...process.env, NO_COLOR: '1', HOME: sandbox, XDG_DATA_HOME: join(sandbox, 'data') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
    const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) => child!.on('exit', (code, signal) => res({ code, signal })));
    const url = await new Promise<string>((resolvePromise, reject) => {
      child!.stdout!.setEncoding('utf8').on('data', (d: string) => {
        out += d;
        const m = /^listening on (\S+)$/m.exec(out);
        if (m) resolvePromise(m[1]!);
      });
      void exit.then(({ code }) => reject(new Error(`serve exited (${code}) before listening:\n${out}\n--- stderr:\n${err}`)));
    });
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);

    const introspect = { token: tokens.access_token, token_type_hint: 'access_token', client_id: 'rs', client_secret: secret };
    // Each request on a connection of its own: the primary hands connections to the workers in turn.
    const before = await Promise.all(Array.from({ length: 8 }, () => post(url, '/oauth/introspection', introspect, false)));
    for (const r of before) expect(r.json).toMatchObject({ active: true, jti: tokens.jti });

    const one = new Agent({ keepAlive: true, maxSockets: 1 });
    const revoked = await post(url, '/oauth/revocation', { ...introspect }, one);
    expect(revoked.json.code).toBe('token_revoke_success');
    const after = await Promise.all(Array.from({ length: 16 }, () => post(url, '/oauth/introspection', introspect, false)));
    for (const r of after) expect(r).toEqual({ status: 200, json: { active: false } });
    // The same connection too.
    expect((await post(url, '/oauth/introspection', introspect, one)).json).toEqual({ active: false });
    one.destroy();

    // Both workers answered: request log lines come from two processes.
    const requestPids = new Set(
      err
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { msg?: string; pid?: number })
        .filter((l) => l.msg === 'request')
        .map((l) => l.pid),
    );
    expect(requestPids.size).toBe(2);
    expect(out.trim().split('\n')).toEqual([`listening on ${url}`]);

    child.kill('SIGTERM');
    expect(await exit).toEqual({ code: 0, signal: null });
    for (const pid of requestPids) expect(() => process.kill(pid!, 0)).toThrow(); // the workers are gone too
  });
});
