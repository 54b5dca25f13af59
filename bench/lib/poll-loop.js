/**
 * The benchmark's bare RFC 8936 receiver: long polls `URL/events/poll` with `authorization`,
 * acknowledges everything it got. Returns stop() → the SETs received, the revocations they carried
 * and the share of a core it used while polling. No import of the bench's own modules (proc.js
 * exits on SIGTERM), so that poll-worker.js can answer SIGTERM with its result.
 *
 * While polling it does what every receiver must (read the answer, parse it, acknowledge its
 * SETs) and no more: the SETs are kept as they came (tens of MB in a run) and decoded only once
 * stopped, to count their revocations: work on the load generator's core can delay the load
 * generator and so cost the server throughput (0–7 % for a process using 4–5 % of that core);
 * decoding while polling took this receiver from 3.0 to 3.8 % of it.
 */
import { Agent, request } from 'node:http';
import { performance } from 'node:perf_hooks';

export function pollLoop(/** @type {string} */ url, /** @type {string} */ authorization) {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  let stopped = false;
  /** @type {string[]} The SETs received, undecoded (their revocations are counted in stop()). */
  const sets = [];
  // The CPU it used while polling (a share of one core), for the log.
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  /** @type {import('node:http').ClientRequest|undefined} */
  let current;
  const poll = (/** @type {string[]} */ ack) =>
    new Promise((resolve, reject) => {
      current = request(url + '/events/poll', { method: 'POST', agent, headers: { authorization, 'content-type': 'application/json' } }, (res) => {
        /** @type {Buffer[]} */
        const chunks = [];
        res.on('data', (d) => chunks.push(d));
        res.on('end', () => {
          // An answer is JSON of SETs, ASCII: read as latin1, its bytes are its characters.
          const body = Buffer.concat(chunks).toString(res.statusCode === 200 ? 'latin1' : 'utf8');
          if (res.statusCode === 200) resolve(JSON.parse(body));
          else reject(new Error(`poll: HTTP ${res.statusCode} ${body.slice(0, 200)}`));
        });
      });
      current.on('error', reject);
      current.end(JSON.stringify({ ack, maxEvents: 1000, returnImmediately: false }));
    });
  const done = (async () => {
    let ack = /** @type {string[]} */ ([]);
    while (!stopped) {
      const answer = /** @type {{ sets: Record<string, string> }} */ (await poll(ack).catch((err) => (stopped ? { sets: {} } : Promise.reject(err))));
      ack = Object.keys(answer.sets);
      for (const set of Object.values(answer.sets)) sets.push(set);
    }
  })();
  // A failure surfaces through stop(), not as an unhandled rejection meanwhile.
  done.catch(() => undefined);
  return async () => {
    stopped = true;
    current?.destroy();
    await done;
    agent.destroy();
    const cpu = process.cpuUsage(cpu0);
    const cpuShare = (cpu.user + cpu.system) / 1000 / (performance.now() - t0);
    let revocations = 0;
    for (const set of sets) revocations += revocationCount(set);
    return { sets: sets.length, revocations, cpuShare };
  };
}

/** How many revocations a SET carries (its payload decoded, not verified: the bench trusts its server). */
function revocationCount(/** @type {string} */ set) {
  const claims = JSON.parse(Buffer.from(set.split('.')[1] ?? '', 'base64url').toString('utf8'));
  const list = claims?.events?.['urn:tokenctl:secevent:tokens-revoked']?.revocations;
  return Array.isArray(list) ? list.length : 0;
}
