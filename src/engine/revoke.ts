import { tokenState, type BulkSelector, type ClientRecord, type TokenRecord } from '../store/store.js';
import { audit, auditLine } from './audit.js';
import { bulkEvent, tokenEvent } from './revocation-events.js';
import { findPresentedToken, type EngineContext, type Located } from './context.js';
import { InvalidInputError, NotFoundError, PartialBulkRevocationError } from './errors.js';
import type { ClientAction, Revocation, RevocationResult } from './results.js';
import { isWellFormedToken } from './tokens.js';

/** `1 batch`, `3 batches`. */
function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}
import type { AuditStore, ClientStore, TokenReads, TokenWrites } from '../store/store.js';

/** The store ports this module uses (store/ports/). */
type Ports = ClientStore & TokenReads & TokenWrites & AuditStore & Located;

const INVALID: Revocation = {
  result: {
    code: 'token_invalid',
    message: 'The token is unknown, expired, or was not issued to this client; nothing was changed',
  },
  jti: null,
  done: { kind: 'revoke_noop' },
};

/**
 * Spec 4.2 / 2.2 / part 3 with contract 3: a client revokes one of its own tokens, `token` being
 * the presented token's record, read with the client (null: none). `token_type_hint` is only a
 * hint (RFC 7009 §2.1): the token is found whatever its type. Revoking a refresh token also
 * revokes every access token of its grant.
 */
export async function revokeFound(ctx: EngineContext<Ports>, client: ClientRecord, token: TokenRecord | null): Promise<Revocation> {
  if (!token || token.clientId !== client.id) return INVALID;
  return revokeRecord(ctx, token, client.id);
}

/**
 * An operator revokes a token from the CLI: any client's. An unknown token is an error here
 * (the operator typed or pasted something wrong), not a silent `token_invalid`.
 */
export async function revokeAsOperator(ctx: EngineContext<Ports>, token: string, actor: string): Promise<RevocationResult> {
  if (!isWellFormedToken(token)) {
    throw new InvalidInputError('this is not a tokenctl token: tokens start with tca_ (access) or tcr_ (refresh) followed by 43 characters');
  }
  const record = await findPresentedToken(ctx, token);
  if (!record) throw new NotFoundError(`no such token in ${ctx.store.location} (it may have been purged, or belong to another store)`);
  return (await revokeRecord(ctx, record, actor)).result;
}

async function revokeRecord(ctx: EngineContext<Ports>, token: TokenRecord, actor: string): Promise<Revocation> {
  const now = ctx.clock.now();
  const state = tokenState(token, now);
  if (state === 'expired') return INVALID;
  // The audit line is written in the revocation's own transaction: one durable commit, not two.
  const line = auditLine(ctx, actor, 'token.revoke', `${token.jti} client:${token.clientId}`, 1, token.type, now);
  if (token.type === 'refresh_token' && token.replacedAt !== null) {
    // Replaced by rotation (or superseded in a grace period): the answer is token_already_revoked,
    // but its grant ends all the same (contract 3): whoever
    // still presents a replaced refresh token, the session is compromised. Harmless when done.
    const revoked = await ctx.store.revokeGrant(token.grantId, now, { audit: auditLine(ctx, actor, 'token.revoke_grant', `${token.jti} grant:${token.grantId} client:${token.clientId}`, 1, token.type, now), event: tokenEvent(token, now, 'revoked', true) });
    return alreadyRevoked(token, revoked > 0 ? { kind: 'revoked', grant: true } : { kind: 'revoke_noop' });
  }
  if (state === 'revoked') return alreadyRevoked(token, { kind: 'revoke_noop' });
  const changed = await ctx.store.revokeToken(token.jti, now, token.type === 'refresh_token', { audit: line, event: tokenEvent(token, now) });
  if (!changed) {
    // Revoked concurrently between our read and our write: the other request won (RFC 7009).
    return alreadyRevoked(token, { kind: 'revoke_noop' });
  }
  return {
    result: { code: 'token_revoke_success', message: `The ${token.type} ${token.jti} has been revoked` },
    jti: token.jti,
    done: { kind: 'revoked', grant: token.type === 'refresh_token' },
  };
}

function alreadyRevoked(token: TokenRecord, done: ClientAction): Revocation {
  return { result: { code: 'token_already_revoked', message: `The ${token.type} ${token.jti} was already revoked` }, jti: token.jti, done };
}

export function describeSelector(selector: BulkSelector): string {
  if ('jti' in selector) return `token ${selector.jti}`;
  if ('username' in selector) return `user ${selector.username}` + (selector.clientId ? ` of client ${selector.clientId}` : '');
  return `client ${selector.clientId}`;
}

function selectorTarget(selector: BulkSelector): string {
  if ('jti' in selector) return selector.jti;
  if ('username' in selector) return `user:${selector.username}` + (selector.clientId ? ` client:${selector.clientId}` : '');
  return `client:${selector.clientId}`;
}

/** How many active tokens a bulk revocation would revoke now (for the confirmation prompt). */
export async function countBulk(ctx: EngineContext<Ports>, selector: BulkSelector): Promise<number> {
  await checkSelector(ctx, selector);
  return ctx.store.countRevocable(selector, ctx.clock.now());
}

/** Checks what the selector names exists; returns the token a `jti` selector names (else null). */
async function checkSelector(ctx: EngineContext<Ports>, selector: BulkSelector): Promise<TokenRecord | null> {
  if ('jti' in selector) {
    const token = await ctx.store.findTokenByJti(selector.jti);
    if (!token) throw new NotFoundError(`no token with jti ${selector.jti} in ${ctx.store.location}`);
    return token;
  }
  if (selector.clientId !== undefined && !(await ctx.store.getClient(selector.clientId))) {
    throw new NotFoundError(`no client with id "${selector.clientId}" (see: tokenctl client list)`);
  }
  return null;
}

/** Rows per batch (tokens; on PostgreSQL, tokens or grants): each batch is one short transaction. */
export const BULK_BATCH = 5_000;

export interface BulkOptions {
  /** Stops at the next batch boundary once aborted (Ctrl-C): what was done stays done, and is said. */
  signal?: AbortSignal;
  /** Rows per batch (tokens; on PostgreSQL, tokens or grants); default {@link BULK_BATCH}. */
  batchSize?: number;
  /** Called after each batch that revoked something, with the running total (a progress bar). */
  onProgress?: (revoked: number) => void;
}

export interface BulkRevocation {
  revoked: number;
  elapsed_ms: number;
  /** True when `signal` stopped it before the end: some of what the selector names may be active. */
  interrupted: boolean;
}

/**
 * Revokes every active token the selector names, a batch at a time (each batch atomic, with its
 * audit line in its own transaction), until the store says nothing is left; a revocation of a
 * user or a client is then final (contract 3): tokens minted from their grants between two
 * batches are revoked by a later one, and none can be minted once it has returned. A failure part
 * way says exactly how many were revoked before it ({@link PartialBulkRevocationError}).
 */
export async function revokeBulk(ctx: EngineContext<Ports>, selector: BulkSelector, actor: string, options: BulkOptions = {}): Promise<BulkRevocation> {
  const named = await checkSelector(ctx, selector);
  const started = Date.now();
  const target = selectorTarget(selector);
  let revoked = 0;
  let interrupted = false;
  let resume: string | undefined;
  let batches = 0;
  for (let more = true; more; ) {
    if (options.signal?.aborted) {
      interrupted = true;
      break;
    }
    const at = ctx.clock.now();
    try {
      const detail = `batch ${batches + 1} of the revocation of ${describeSelector(selector)} started ${new Date(started).toISOString()}`;
      const line = auditLine(ctx, actor, 'token.revoke_bulk.batch', target, 0, detail, at);
      // Each batch carries its own event, which the store writes only when the batch revoked a
      // token (docs/events.md): the first one tells the receivers before the rest is done, so
      // that an interruption, a crash or a store error part way still tells them, and each later
      // one drops again what a receiver cached meanwhile of tokens that batch revoked.
      const event = bulkEvent(selector, at, named);
      const batch = await ctx.store.revokeBulk(selector, at, options.batchSize ?? BULK_BATCH, resume, { audit: line, event });
      if (batch.revoked > 0) batches++;
      revoked += batch.revoked;
      if (batch.revoked > 0) options.onProgress?.(revoked);
      more = batch.more;
      resume = batch.resume;
    } catch (error) {
      if (revoked === 0) throw error;
      throw new PartialBulkRevocationError(revoked, describeSelector(selector), error);
    }
  }
  // One line for the operation, after its batches (each audited with itself); nothing to revoke
  // is worth a line too: the operator asked, and the trail says so.
  if (interrupted && revoked > 0) await audit(ctx, actor, 'token.revoke_bulk_interrupted', target, revoked, `${describeSelector(selector)}: interrupted after ${revoked} revoked`);
  else await audit(ctx, actor, 'token.revoke_bulk', target, revoked, `${describeSelector(selector)}${interrupted ? ' (interrupted)' : ''}: ${plural(batches, 'batch', 'batches')}`);
  return { revoked, elapsed_ms: Date.now() - started, interrupted };
}
