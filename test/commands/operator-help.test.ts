import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMMANDS } from '../../src/commands/index.js';
import { formatLogLine } from '../../src/cli/render/log-line.js';
import { hasScript, startTokenctl, stripAnsi, tempStore, tokenctl, tokenctlInTerminal, type TempStore } from '../helpers/cli.js';

describe('help written for operators', () => {
  it('no command’s help cites documents operators do not have (spec parts, contract sections)', async () => {
    for (const [id, command] of Object.entries(COMMANDS)) {
      const c = command as { summary?: string; description?: string; flags?: Record<string, { description?: string }> };
      const texts = [c.summary ?? '', c.description ?? '', ...Object.values(c.flags ?? {}).map((f) => f.description ?? '')];
      for (const text of texts) expect(text, id).not.toMatch(/\bspec\b|\bcontract\b/i);
    }
  });

  it('serve’s summary says what plain serve does: HTTPS, or plain HTTP on loopback', async () => {
    const r = await tokenctl(['serve', '--help']);
    expect(r.stdout.split('\n')[0]).toMatch(/over HTTPS, or plain HTTP on loopback/);
  });
});

describe('client create --secret -', () => {
  let store: TempStore;
  beforeAll(() => {
    store = tempStore();
  });
  afterAll(() => store.cleanup());

  it('reads the secret from stdin, so that it is not in ps; it then authenticates', async () => {
    const secret = 'stdin-secret-0123456789';
    const created = await store.json<{ client_id: string }>(['client', 'create', '--name', 'x', '--secret', '-'], { input: `${secret}\n` });
    const t = await store.json<{ refresh_token: string }>(['token', 'issue', '--client', created.client_id, '--user', 'u']);
    const ok = await store.run(['refresh', t.refresh_token, '--client-id', created.client_id, '--json'], { env: { TOKENCTL_CLIENT_SECRET: secret } });
    expect(ok.code, ok.stderr).toBe(0);
  });
});

describe('serve logs', () => {
  it('a request line reads as text on a terminal', () => {
    const line = JSON.stringify({ level: 30, time: Date.UTC(2026, 0, 1, 12, 0, 1), pid: 1, hostname: 'h', reqId: 'req-1', method: 'POST', path: '/oauth/token', status: 401, ms: 1.2, ip: '127.0.0.1', error: 'invalid_client', msg: 'request' });
    expect(stripAnsi(formatLogLine(line))).toBe('12:00:01 INFO  POST /oauth/token 401 1.2 ms error=invalid_client ip=127.0.0.1 reqId=req-1');
    expect(formatLogLine('not json')).toBe('not json');
  });

  it('without a terminal: JSON lines on stderr', async () => {
    const store = tempStore();
    const serve = startTokenctl(['serve', '--port', '0', '--db', store.db]);
    try {
      await serve.waitFor(/listening on http:\/\/127\.0\.0\.1:\d+/);
      const logLines = serve.output().stderr.split('\n').filter((l) => l.startsWith('{'));
      expect(logLines.length).toBeGreaterThan(0);
      for (const l of logLines) expect(() => JSON.parse(l)).not.toThrow();
    } finally {
      await serve.stop();
      store.cleanup();
    }
  });

  it.skipIf(!hasScript())('on a terminal: no raw JSON, readable lines', async () => {
    const store = tempStore();
    try {
      const run = await tokenctlInTerminal(['serve', '--port', '0', '--db', store.db], { answers: [{ when: /listening on http/, send: '\x03' }], timeoutMs: 20_000 });
      const output = stripAnsi(run.output);
      expect(output).toMatch(/listening on http:\/\/127\.0\.0\.1:\d+/);
      expect(output).toMatch(/\d\d:\d\d:\d\d INFO {2}server listening at/);
      expect(output).not.toContain('{"level"');
    } finally {
      store.cleanup();
    }
  });
});
