import { afterEach, describe, expect, it } from 'vitest';
import { ReceiverReports } from '../../src/http/routes/receiver-reports.js';
import { captureLog, createClient, rfcBasic, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * A poll receiver's own text (the SET errors it reports, RFC 8936 §2.4.3) in the server log: a
 * receiver could put its whole 64 KiB poll body into a warning on every poll. Now a line tells
 * how many with a few samples cut short, its control characters replaced, once a minute per
 * receiver at most.
 */
const flood = (n: number, tag: string) =>
  Object.fromEntries(Array.from({ length: n }, (_, i) => [`${tag}-${i}-${'j'.repeat(40)}`, { err: 'invalid_key', description: `\u001b]0;owned\u0007${'x'.repeat(400)}` }]));

describe('what a poll receiver reports reaches the log bounded and throttled', () => {
  let s: TestServer | undefined;
  afterEach(() => s?.close());

  it('a 60 KB report is one short line; the next polls within the minute add no line', async () => {
    const log = captureLog();
    s = await startTestServer({ logger: { level: 'info', stream: log.stream } });
    const rs = await createClient(s.engine, 'rs-client');
    await s.engine.addReceiver({ id: 'rs-poll', delivery: 'poll', clientId: rs.id, audience: 'rs' }, 'test');
    const poll = (setErrs: object) =>
      fetch(`${s!.url}/events/poll`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: rfcBasic(rs) }, body: JSON.stringify({ returnImmediately: true, setErrs }) });
    const body = JSON.stringify({ returnImmediately: true, setErrs: flood(120, 'a') });
    expect(body.length).toBeGreaterThan(55_000);
    for (const tag of ['a', 'b', 'c']) expect((await poll(flood(120, tag))).status).toBe(200);
    const warnings = log.text().split('\n').filter((l) => l.includes('reported errors for SETs'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.length).toBeLessThan(1500);
    expect(JSON.parse(warnings[0]!)).toMatchObject({ receiver: 'rs-poll', count: 120, sample: expect.any(Array) });
    expect(warnings[0]).not.toMatch(/\\u001b|\\u0007/);
  });

  it('tells what it did not log in its next line', () => {
    let now = 0;
    const reports = new ReceiverReports(60_000, () => now);
    expect(reports.report('r', flood(5, 'a'))).toMatchObject({ count: 5 });
    now += 30_000;
    expect(reports.report('r', flood(7, 'b'))).toBeUndefined();
    expect(reports.report('other', flood(1, 'c'))).toMatchObject({ receiver: 'other', count: 1 });
    now += 30_000;
    const next = reports.report('r', flood(2, 'd'))!;
    expect(next).toMatchObject({ count: 2, notLoggedSince: 7 });
    expect((next.sample as { description: string }[])[0]!.description).toMatch(/^\?\]0;owned\?x+…$/);
    expect(reports.report('r', {})).toBeUndefined();
  });
});
