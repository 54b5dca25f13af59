/**
 * The benchmark's bare RFC 8936 receiver: long polls `URL/events/poll` with `authorization`,
 * acknowledges everything it got. Returns stop() → the SETs received and the revocations they
 * carried. No import of the bench's own modules (proc.js exits on SIGTERM), so that
 * poll-worker.js can answer SIGTERM with its result.
 */
import { Agent, request } from 'node:http';

export function pollLoop(/** @type {string} */ url, /** @type {string} */ authorization) {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  let stopped = false;
  let received = 0;
  let revocations = 0;
  /** @type {import('node:http').ClientRequest|undefined} */
  let current;
  const poll = (/** @type {string[]} */ ack) =>
    new Promise((resolve, reject) => {
      current = request(url + '/events/poll', { method: 'POST', agent, headers: { authorization, 'content-type': 'application/json' } }, (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (d) => (body += d));
        res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(body)) : reject(new Error(`poll: HTTP ${res.statusCode} ${body.slice(0, 200)}`))));
      });
      current.on('error', reject);
      current.end(JSON.stringify({ ack, maxEvents: 1000, returnImmediately: false }));
    });
  const done = (async () => {
    let ack = /** @type {string[]} */ ([]);
    while (!stopped) {
      const answer = /** @type {{ sets: Record<string, string> }} */ (await poll(ack).catch((err) => (stopped ? { sets: {} } : Promise.reject(err))));
      ack = Object.keys(answer.sets);
      received += ack.length;
      for (const set of Object.values(answer.sets)) revocations += revocationCount(set);
    }
  })();
  // A failure surfaces through stop(), not as an unhandled rejection meanwhile.
  done.catch(() => undefined);
  return async () => {
    stopped = true;
    current?.destroy();
    await done;
    agent.destroy();
    return { sets: received, revocations };
  };
}

/** How many revocations a SET carries (its payload decoded, not verified: the bench trusts its server). */
function revocationCount(/** @type {string} */ set) {
  const claims = JSON.parse(Buffer.from(set.split('.')[1] ?? '', 'base64url').toString('utf8'));
  const list = claims?.events?.['urn:tokenctl:secevent:tokens-revoked']?.revocations;
  return Array.isArray(list) ? list.length : 0;
}
