/*
 * What the processes of the PostgreSQL outbox races do and report (postgres-events.test.ts runs
 * them, pg-events-worker.ts is each process): shared by both sides.
 */

/** A claim as the deliverer saw it. */
export interface ClaimLog {
  owner: string;
  receiverId: string;
  now: number;
  until: number;
  events: string[];
}
/** A settlement 'delivered' the deliverer sent, and when the call returned. */
export interface SettleLog {
  owner: string;
  receiverId: string;
  eventId: string;
  /** The claim it belongs to (its `now`). */
  claimedAt: number;
  leaseUntil: number;
  returnedAt: number;
}
/** One revocation: the tokens it revokes, its event, and whether it said it revoked. */
export interface OpLog {
  op: string;
  eventId: string;
  jtis: string[];
  changed: boolean;
  error?: string;
}

/** What the revoke worker's op `i` of process `p` revokes: made the same way by the test, which inserts the tokens. */
export function opTokens(p: number, i: number): { kind: 'access' | 'cascade' | 'grant' | 'bulk'; username: string; grants: string[]; jtis: string[] } {
  const kinds = ['access', 'cascade', 'grant', 'bulk'] as const;
  const kind = kinds[i % kinds.length]!;
  const base = `r${p}-${i}`;
  const grants = kind === 'access' ? [`${base}-g1`] : kind === 'bulk' ? [`${base}-g1`, `${base}-g2`] : [`${base}-g1`];
  // access: the access token of its grant alone; the others: every token of their grants.
  const jtis = kind === 'access' ? [`${base}-g1-access`] : grants.flatMap((g) => [`${g}-refresh`, `${g}-access`]);
  return { kind, username: `user-${base}`, grants, jtis };
}
