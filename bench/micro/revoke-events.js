#!/usr/bin/env node
/**
 * What security events (docs/events.md) cost a revocation in the SQLite store, below the HTTP layer:
 * CPU and wall time per revokeToken through the store's own API (dist/, so `npm run build`
 * first), 30 revocations arriving together as the server's group commit sees them, with the
 * server's commit mode (synced off the event loop). Three modes, alternated round by round on
 * one file:
 *   off        no event argument (a store without security events);
 *   none       an event, no receiver registered (what every store pays: one lookup);
 *   receivers  an event and two receivers (one push, one poll): the event and two deliveries written.
 * Usage: [MODES=off,none,receivers] node bench/micro/revoke-events.js [ROUNDS] [TOKENS_PER_ROUND]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { randomUUID } from 'node:crypto';
import { SqliteStore } from '../../dist/store/sqlite/index.js';
import { newJti } from '../../dist/engine/tokens.js';
import { clientRecord, receiverRecord, tokenRecord } from '../lib/records.js';

const [rounds = '30', perRound = '3000'] = process.argv.slice(2);
const ROUNDS = Number(rounds);
const PER_ROUND = Number(perRound);
const TOGETHER = 30;
const dir = mkdtempSync(join(tmpdir(), 'tokenctl-micro-'));
const store = await SqliteStore.open(join(dir, 'tokens.db'), { backgroundCheckpoints: true });
const T0 = Date.now();
await store.createClient(clientRecord({ id: 'c', orgId: 'o', audience: 'a', createdAt: T0, secretUpdatedAt: T0 }), {});

/** @param {number} n */
async function freshTokens(n) {
  const tokens = Array.from({ length: n }, () => {
    const jti = newJti();
    return tokenRecord({ jti, digest: randomUUID(), type: 'access_token', grantId: newJti(), clientId: 'c', audience: 'a', orgId: 'o', node: 'n', issuedAt: T0, notBefore: T0, expiresAt: T0 + 3_600_000 });
  });
  for (let i = 0; i < n; i += 500) await store.insertTokens(tokens.slice(i, i + 500));
  return tokens;
}

/** @param {'off'|'none'|'receivers'} mode */
async function round(mode) {
  const receivers = mode === 'receivers';
  if (receivers) {
    await store.createReceiver(receiverRecord({ id: 'push', endpointUrl: 'https://r.example/events', createdAt: T0 }), {});
    await store.createReceiver(receiverRecord({ id: 'poll', delivery: 'poll', clientId: 'c', createdAt: T0 }), {});
  }
  const tokens = await freshTokens(PER_ROUND);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < tokens.length; i += TOGETHER) {
    await Promise.all(
      tokens.slice(i, i + TOGETHER).map((t) => {
        const at = Date.now();
        const event = mode === 'off' ? undefined : { id: newJti(at), at, reason: 'revoked', scope: 'token', jti: t.jti, tokenType: t.type, grantId: t.grantId, username: t.username, clientId: t.clientId };
        return store.revokeToken(t.jti, at, false, { event });
      }),
    );
  }
  const cpu = process.cpuUsage(cpu0);
  const wall = performance.now() - t0;
  if (receivers) {
    await store.deleteReceiver('push', {});
    await store.deleteReceiver('poll', {});
    while ((await store.purgeDeliveredEvents(10_000)) > 0);
  }
  return { cpu: (cpu.user + cpu.system) / tokens.length, wall: (wall * 1000) / tokens.length };
}

/** MODES=none,receivers: only these (e.g. one mode per run, under `perf stat -e instructions`). */
const modes = /** @type {('off'|'none'|'receivers')[]} */ (process.env.MODES ? process.env.MODES.split(',') : ['off', 'none', 'receivers']);
/** @type {Record<string, {cpu: number, wall: number}[]>} */
const results = { off: [], none: [], receivers: [] };
try {
  for (const mode of modes) await round(mode); // warm-up
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 === 0 ? modes : [...modes].reverse();
    for (const mode of order) results[mode]?.push(await round(mode));
  }
  const median = (/** @type {number[]} */ xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
  const off = median(results.off.map((x) => x.cpu)); // NaN without the off mode
  for (const mode of modes) {
    const cpu = median(results[mode].map((x) => x.cpu));
    const wall = median(results[mode].map((x) => x.wall));
    console.log(`${mode.padEnd(9)} ${cpu.toFixed(1)} µs CPU, ${wall.toFixed(1)} µs wall per revocation (median of ${ROUNDS} rounds of ${PER_ROUND}); off/this CPU ${(off / cpu).toFixed(3)}`);
  }
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
