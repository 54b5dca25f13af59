import type { OutboxStore } from '../store/store.js';

/*
 * The bounded outbox, in the deliverer's housekeeping (once a minute, in every serving process):
 * deliveries pending longer than their receiver's retention become dead letters, and a receiver
 * whose oldest pending delivery is older than the lag warning is said in the log (docs/events.md).
 */

/** Dead letters made per store write, and writes a round at most: a backlog goes in batches. */
export const EXPIRE_BATCH = 1000;
export const EXPIRE_MAX_BATCHES = 100;

type Log = (level: 'info' | 'warn' | 'error', fields: Record<string, unknown>, message: string) => void;

/** Applies the receivers' retentions at `now`; returns how many deliveries became dead letters. */
export async function expireDeliveries(store: OutboxStore, now: number, stopping: () => boolean, log?: Log): Promise<number> {
  let total = 0;
  try {
    for (let batch = 0; batch < EXPIRE_MAX_BATCHES && !stopping(); batch++) {
      const n = await store.expireDeliveries(now, EXPIRE_BATCH);
      total += n;
      if (n < EXPIRE_BATCH) break;
    }
  } catch (err) {
    log?.('warn', { err }, 'event housekeeping failed: the receivers\' retention not applied; trying again in a minute');
  }
  if (total > 0) log?.('error', { deadLetters: total }, 'security events pending longer than their receiver\'s retention became dead letters (tokenctl receiver list; receiver retry ID requeues them)');
  return total;
}

/** Warns of each receiver behind: its oldest pending delivery older than `lagMs` at `now`. Returns their ids. */
export async function warnLagging(store: OutboxStore, now: number, lagMs: number, log?: Log): Promise<string[]> {
  let receivers;
  try {
    receivers = await store.listReceivers();
  } catch (err) {
    log?.('warn', { err }, 'event housekeeping failed: the receivers\' lag not checked; trying again in a minute');
    return [];
  }
  const behind: string[] = [];
  for (const r of receivers) {
    if (r.oldestPendingAt === null || now - r.oldestPendingAt <= lagMs) continue;
    behind.push(r.id);
    const ageS = Math.round((now - r.oldestPendingAt) / 1000);
    log?.('warn', { receiver: r.id, pending: r.pending, dead: r.dead, oldestPendingAgeS: ageS, lagWarningS: lagMs / 1000 }, `security events: receiver ${r.id} is behind: its oldest pending event is ${ageS} s old`);
  }
  return behind;
}
