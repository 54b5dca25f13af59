#!/usr/bin/env node
/**
 * What one RFC 8936 poll cycle costs the SQLite server below HTTP (dist/, so `npm run build` first):
 * the poll function of src/events/poll.ts (acknowledge the last answer's SETs, read what is pending,
 * sign it) against revocations arriving TOGETHER at a time, with one poll receiver registered.
 * A bare receiver polling in a loop gets one cycle per group commit while revocations go on,
 * so this is the events' cost per group commit beside the revocations' own (the micro revoke-events.js).
 * Usage: node bench/micro/poll-cycle.js [CYCLES] [TOGETHER] [COMMITS]
 * (COMMITS: group commits of TOGETHER revocations between two polls, default 1; the server's 50 ms
 * pace of long polls gives ~30 under the bench's load.)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { SqliteStore } from '../../dist/store/sqlite/index.js';
import { newJti } from '../../dist/engine/tokens.js';
import { poll } from '../../dist/events/poll.js';
import { SigningKeys } from '../../dist/events/keys.js';
import { clientRecord, receiverRecord, tokenRecord } from '../lib/records.js';

const [cyclesArg = '2000', togetherArg = '17', commitsArg = '1'] = process.argv.slice(2);
const CYCLES = Number(cyclesArg);
const TOGETHER = Number(togetherArg);
const COMMITS = Number(commitsArg);
const dir = mkdtempSync(join(tmpdir(), 'tokenctl-micro-'));
const store = await SqliteStore.open(join(dir, 'tokens.db'), { backgroundCheckpoints: true });
try {
  const T0 = Date.now();
  await store.createClient(clientRecord({ id: 'c', orgId: 'o', audience: 'a', createdAt: T0, secretUpdatedAt: T0 }), {});
  const receiver = receiverRecord({ id: 'poll', delivery: 'poll', clientId: 'c', createdAt: T0 });
  await store.createReceiver(receiver, {});
  const keys = new SigningKeys(store);
  await keys.ensureCurrent();
  const deps = { store, keys, issuer: () => 'https://issuer.example' };
  const tokens = Array.from({ length: CYCLES * COMMITS * TOGETHER }, () => tokenRecord({ jti: newJti(), digest: randomUUID(), type: 'access_token', grantId: newJti(), clientId: 'c', audience: 'a', orgId: 'o', node: 'n', issuedAt: T0, notBefore: T0, expiresAt: T0 + 3_600_000 }));
  for (let i = 0; i < tokens.length; i += 500) await store.insertTokens(tokens.slice(i, i + 500));
  let revokeCpu = 0;
  let pollCpu = 0;
  let sets = 0;
  let ack = /** @type {string[]} */ ([]);
  for (let c = 0; c < CYCLES; c++) {
    const r0 = process.cpuUsage();
    for (let g = 0; g < COMMITS; g++) {
      const first = (c * COMMITS + g) * TOGETHER;
      await Promise.all(tokens.slice(first, first + TOGETHER).map((t) => {
        const at = Date.now();
        return store.revokeToken(t.jti, at, false, { event: { id: newJti(at), at, reason: 'revoked', scope: 'token', jti: t.jti, tokenType: t.type, grantId: t.grantId, username: t.username, clientId: t.clientId } });
      }));
    }
    const r = process.cpuUsage(r0);
    const p0 = process.cpuUsage();
    const out = await poll(deps, receiver, { maxEvents: 1000, returnImmediately: true, ack, setErrs: {} });
    const p = process.cpuUsage(p0);
    ack = Object.keys(JSON.parse(out.body.toString("utf8")).sets);
    out.release();
    sets += ack.length;
    revokeCpu += r.user + r.system;
    pollCpu += p.user + p.system;
  }
  const perCycle = COMMITS * TOGETHER;
  console.log(`${CYCLES} cycles of ${COMMITS} × ${TOGETHER} revocations: revocations ${(revokeCpu / CYCLES).toFixed(0)} µs CPU per cycle (${(revokeCpu / CYCLES / perCycle).toFixed(1)} per revocation), poll ${(pollCpu / CYCLES).toFixed(0)} µs CPU per cycle (${(pollCpu / CYCLES / perCycle).toFixed(1)} per revocation; ${sets} SETs)`);
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
