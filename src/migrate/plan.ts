import { TOKEN_TYPES, type AuditEntry, type StoreStats, type TokenState, type TokenStore } from '../store/store.js';
import { MigrateError } from './errors.js';

/*
 * The look before a migration (`tokenctl migrate`, and its --dry-run): what each store holds, and
 * whether copying one into the other makes sense. Reads only.
 */

/** The audit action a migration leaves in the target. */
export const MIGRATE_ACTION = 'store.migrate';

/** What a store holds, as a migration plan shows it. */
export interface StoreContents {
  location: string;
  clients: number;
  /** Tokens by state at the plan's `now`, both types together. */
  tokens: Record<TokenState, number>;
  tokenTotal: number;
  audit: number;
}

/** What {@link planMigration} found: both stores, and an earlier migration between them. */
export interface MigrationPlan {
  now: number;
  source: StoreContents;
  target: StoreContents;
  /** The target's audit line of an earlier migration from this same source, if any. */
  previous: AuditEntry | null;
}

/**
 * Looks at both stores, reading only, and refuses a migration that makes no sense: the same
 * store twice, an empty source (a mistyped path or schema), or, unless `merge`, a target that
 * holds anything already (a second run; another deployment's data).
 */
export async function planMigration(source: TokenStore, target: TokenStore, options: { merge?: boolean; now?: number } = {}): Promise<MigrationPlan> {
  if (source.location === target.location) {
    throw new MigrateError('same_store', `the source and the target are the same store: ${source.location}`);
  }
  const now = options.now ?? Date.now();
  const [from, into, targetAudit] = await Promise.all([contents(source, now), contents(target, now), target.listAudit({})]);
  const plan: MigrationPlan = { now, source: from, target: into, previous: previousMigration(targetAudit, source.location) };
  if (from.clients === 0 && from.tokenTotal === 0) {
    throw new MigrateError(
      'source_empty',
      `the source ${source.location} holds no clients and no tokens: nothing to migrate`,
      'check --from: is it the store your server uses? (tokenctl status --db <it>)',
    );
  }
  if (!options.merge && !isEmpty(into)) {
    const held = `${count(into.clients, 'client')}, ${count(into.tokenTotal, 'token')} and ${count(into.audit, 'audit entry', 'audit entries')}`;
    const message = plan.previous
      ? `${target.location} was already migrated from ${source.location} (at ${new Date(plan.previous.at).toISOString()}), and holds ${held}: nothing copied`
      : `the target ${target.location} is not empty (it holds ${held}): nothing copied`;
    throw new MigrateError(
      'target_not_empty',
      message,
      'to copy only what the target lacks, without changing what it has, run again with --merge; to start over, empty the target first',
    );
  }
  return plan;
}

async function contents(store: TokenStore, now: number): Promise<StoreContents> {
  const [stats, audit] = await Promise.all([store.stats(now), store.listAudit({})]);
  const tokens: Record<TokenState, number> = { active: 0, expired: 0, revoked: 0 };
  for (const type of TOKEN_TYPES) for (const state of Object.keys(tokens) as TokenState[]) tokens[state] += stats.tokens[type][state];
  return { location: store.location, clients: stats.clients, tokens, tokenTotal: tokenTotal(stats), audit: audit.length };
}

function count(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

function isEmpty(c: StoreContents): boolean {
  return c.clients === 0 && c.tokenTotal === 0 && c.audit === 0;
}

export function tokenTotal(stats: StoreStats): number {
  let n = 0;
  for (const type of TOKEN_TYPES) for (const count of Object.values(stats.tokens[type])) n += count;
  return n;
}

/** The latest migration from `from` recorded in the target's audit trail (newest first). */
function previousMigration(newestFirst: AuditEntry[], from: string): AuditEntry | null {
  return newestFirst.find((e) => e.action === MIGRATE_ACTION && e.detail.startsWith(`from ${from}:`)) ?? null;
}
