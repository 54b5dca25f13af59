import { randomBytes } from 'node:crypto';
import { tokenState, type ClientStore, type OutboxStore, type ReceiverRecord, type TokenReads } from '../store/store.js';
import { auditLine } from './audit.js';
import { findPresentedToken, splitScope, type EngineContext } from './context.js';
import { AccessDeniedError, InvalidInputError, NotFoundError } from './errors.js';
import { recordedEndpoint } from './push-destination.js';
import { addReceiver, checkPushUrl } from './receivers.js';
import { newJti } from './tokens.js';
import type { SetAlg } from './signing-keys.js';
import { checkAlg, checkEventsRequested, EVENTS_SUPPORTED, MIN_VERIFICATION_INTERVAL_S, STREAM_STATUSES, streamJson, streamSettingsOf, untilWritten, type StreamSettings, type StreamStatus } from './stream-settings.js';

/** The store ports this module uses (store/ports/). */
type Ports = ClientStore & OutboxStore & TokenReads;

/**
 * OpenID SSF 1.0 §8: stream management by the receivers themselves, authorized with access tokens
 * of the client credentials grant (contract 7; CAEP interoperability profile "OAuth Scopes").
 * A stream is a receiver (ReceiverRecord) whose settings name the client that made it; the
 * operator sees it in `receiver list` like any other. A client reads the streams it made and the
 * poll receiver it polls as; it changes only the ones it made.
 */

/** Scopes (CAEP interoperability profile): `ssf.manage` for every operation, `ssf.read` for reads. */
export const SSF_MANAGE = 'ssf.manage';
export const SSF_READ = 'ssf.read';
/** SSF delivery method URIs (RFC 8935 push, RFC 8936 poll). */
export const DELIVERY_PUSH = 'urn:ietf:rfc:8935';
export const DELIVERY_POLL = 'urn:ietf:rfc:8936';
/** What a stream made through the API is signed with unless it asks: the interoperability profile's RS256. */
export const API_STREAM_ALG: SetAlg = 'RS256';

/** Who is asking, or why not (RFC 6750 §3.1 error codes: the route writes the challenge). */
export type SsfAccess = { ok: true; clientId: string } | { ok: false; status: 400 | 401 | 403; error: 'invalid_request' | 'invalid_token' | 'insufficient_scope'; description: string; scope?: string };

/**
 * RFC 6750 §2.1: the Bearer access token of `authorization`, introspected here (active, an access
 * token, not before its time), with `ssf.manage` (or, for a read, `ssf.read`).
 */
export async function ssfAccess(ctx: EngineContext<Ports>, authorization: string | undefined, write: boolean): Promise<SsfAccess> {
  const needed = write ? SSF_MANAGE : `${SSF_READ} or ${SSF_MANAGE}`;
  const m = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(authorization ?? '');
  if (!m) return { ok: false, status: 401, error: 'invalid_token', description: 'an access token is required: Authorization: Bearer <token> (RFC 6750 §2.1)', scope: needed };
  const token = await findPresentedToken(ctx, m[1]!);
  const now = ctx.clock.now();
  if (!token || token.type !== 'access_token' || tokenState(token, now) !== 'active' || token.notBefore > now) {
    return { ok: false, status: 401, error: 'invalid_token', description: 'the access token is not active' };
  }
  const scopes = splitScope(token.scope);
  if (!scopes.includes(SSF_MANAGE) && (write || !scopes.includes(SSF_READ))) {
    return { ok: false, status: 403, error: 'insufficient_scope', description: `the access token's scope lacks ${needed}`, scope: needed };
  }
  return { ok: true, clientId: token.clientId };
}

/** The streams `clientId` may read: those it made, and the poll receiver it polls as. */
export async function listStreams(ctx: EngineContext<Ports>, clientId: string): Promise<ReceiverRecord[]> {
  return (await ctx.store.listReceivers()).filter((r) => readable(r, clientId));
}

function readable(r: ReceiverRecord, clientId: string): boolean {
  const owner = streamSettingsOf(r.stream).owner;
  return owner === clientId || (owner === undefined && r.delivery === 'poll' && r.clientId === clientId);
}

/** One stream `clientId` may read, or NotFoundError (SSF §8.1.1.2: 404); `write`: one it made, else AccessDeniedError (403). */
export async function getStream(ctx: EngineContext<Ports>, clientId: string, streamId: unknown, write = false): Promise<ReceiverRecord> {
  if (typeof streamId !== 'string' || streamId === '') throw new InvalidInputError('stream_id is required');
  const r = await ctx.store.getReceiver(streamId);
  if (!r || !readable(r, clientId)) throw new NotFoundError(`no stream with stream_id "${streamId}"`);
  if (write && streamSettingsOf(r.stream).owner !== clientId) throw new AccessDeniedError(`stream "${streamId}" was registered by the operator: only they change it`);
  return r;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The Receiver-Supplied members of a stream configuration (SSF §8.1.1), checked. */
interface StreamInput {
  delivery?: { method: 'push'; endpointUrl: string; authorization?: string } | { method: 'poll' };
  eventsRequested?: string[];
  description?: string;
  alg?: SetAlg;
}

/** Reads the members of a create, update or replace body (SSF §8.1.1.1, §8.1.1.3, §8.1.1.4); InvalidInputError (400) for what is wrong. */
export function streamInput(body: unknown): StreamInput {
  if (!isObject(body)) throw new InvalidInputError('the request body must be a JSON object (SSF 1.0 §8.1.1)');
  const input: StreamInput = {};
  if (body.delivery !== undefined) {
    const d = body.delivery;
    if (!isObject(d) || typeof d.method !== 'string') throw new InvalidInputError('delivery must be an object with a method');
    if (d.method === DELIVERY_PUSH) {
      if (typeof d.endpoint_url !== 'string') throw new InvalidInputError('a push stream needs delivery.endpoint_url');
      if (d.authorization_header !== undefined && typeof d.authorization_header !== 'string') throw new InvalidInputError('delivery.authorization_header must be a string');
      input.delivery = { method: 'push', endpointUrl: d.endpoint_url, ...(typeof d.authorization_header === 'string' ? { authorization: d.authorization_header } : {}) };
    } else if (d.method === DELIVERY_POLL) {
      input.delivery = { method: 'poll' };
    } else {
      throw new InvalidInputError(`delivery.method must be ${DELIVERY_PUSH} or ${DELIVERY_POLL}`);
    }
  }
  if (body.events_requested !== undefined) {
    input.eventsRequested = checkEventsRequested(body.events_requested);
  }
  if (body.description !== undefined) {
    if (typeof body.description !== 'string' || body.description.length > 1024) throw new InvalidInputError('description must be a string of at most 1024 characters');
    input.description = body.description;
  }
  // A tokenctl member: the algorithm of the stream's SETs (ES256 or RS256).
  if (body.signing_alg !== undefined) {
    input.alg = checkAlg(body.signing_alg);
  }
  return input;
}

/**
 * SSF §8.1.1.1: a new stream of `clientId`'s (poll by default), its events those requested (all
 * supported ones when it names none). A poll stream is polled by that client (one per client:
 * a second is InvalidInputError, which the route answers 409).
 */
export async function createStream(ctx: EngineContext<Ports>, clientId: string, body: unknown): Promise<ReceiverRecord> {
  const input = streamInput(body);
  const id = `ssf-${randomBytes(12).toString('base64url')}`;
  const settings: StreamSettings = {
    eventsRequested: input.eventsRequested ?? [...EVENTS_SUPPORTED],
    alg: input.alg ?? API_STREAM_ALG,
    status: 'enabled',
    owner: clientId,
    ...(input.description !== undefined ? { description: input.description } : {}),
  };
  const d = input.delivery ?? { method: 'poll' as const };
  if (d.method === 'poll' && (await ctx.store.findPollReceiver(clientId))) throw new StreamConflictError(`client "${clientId}" already has a poll stream: one poll stream per client`);
  const actor = `ssf:${clientId}`;
  const common = { id, audience: clientId, stream: streamJson(settings) };
  if (d.method === 'push') {
    await addReceiver(ctx, { ...common, delivery: 'push', endpointUrl: d.endpointUrl, ...(d.authorization !== undefined ? { authorization: d.authorization } : {}), allowPrivateNetwork: ctx.config.ssfPrivateNetwork }, actor);
  } else {
    await addReceiver(ctx, { ...common, delivery: 'poll', clientId }, actor);
  }
  return (await ctx.store.getReceiver(id))!;
}

/**
 * SSF §8.1.1.3 (update, PATCH: the members given) and §8.1.1.4 (replace, PUT: every
 * Receiver-Supplied member, those absent at their defaults). The delivery method stays what it
 * was (a poll stream cannot become a push one: InvalidInputError); a push endpoint may change.
 */
export async function updateStream(ctx: EngineContext<Ports>, clientId: string, body: unknown, replace: boolean): Promise<ReceiverRecord> {
  const streamId = isObject(body) ? body.stream_id : undefined;
  return untilWritten(streamId, async () => {
    const r = await getStream(ctx, clientId, streamId, true);
    return saved(ctx, r, updated(ctx, r, streamInput(body), replace), 'stream updated');
  });
}

/** The change of an update or replace of `r` (see {@link updateStream}). */
function updated(ctx: EngineContext<Ports>, r: ReceiverRecord, input: StreamInput, replace: boolean): Partial<Pick<ReceiverRecord, 'endpointUrl' | 'authorization'>> & { stream: string } {
  const before = streamSettingsOf(r.stream);
  const settings: StreamSettings = {
    ...before,
    eventsRequested: input.eventsRequested ?? (replace ? [...EVENTS_SUPPORTED] : before.eventsRequested),
    alg: input.alg ?? (replace ? API_STREAM_ALG : before.alg),
  };
  if (input.description !== undefined) settings.description = input.description;
  else if (replace) delete settings.description;
  let { endpointUrl, authorization } = r;
  if (input.delivery !== undefined || replace) {
    const d = input.delivery ?? { method: 'poll' as const };
    if ((d.method === 'push') !== (r.delivery === 'push')) throw new InvalidInputError(`the stream's delivery method stays ${r.delivery === 'push' ? DELIVERY_PUSH : DELIVERY_POLL}: create another stream for another`);
    if (d.method === 'push') {
      const made = checkedPush(ctx, d.endpointUrl, d.authorization);
      endpointUrl = made.endpointUrl;
      authorization = made.authorization;
    }
  }
  return { endpointUrl, authorization, stream: streamJson(settings) };
}

/** A push endpoint and Authorization value as `receiver add` would record them (the checks are its own). */
function checkedPush(ctx: EngineContext<Ports>, endpointUrl: string, authorization?: string): Pick<ReceiverRecord, 'endpointUrl' | 'authorization'> {
  const url = checkPushUrl(endpointUrl, ctx.config.ssfPrivateNetwork);
  if (authorization !== undefined && (authorization.trim() === '' || authorization.length > 4096 || /[\r\n\0]/.test(authorization))) {
    throw new InvalidInputError('delivery.authorization_header must be one line of 1 to 4096 characters');
  }
  return { endpointUrl: recordedEndpoint(url, ctx.config.ssfPrivateNetwork), authorization: authorization?.trim() ?? null };
}

/**
 * Writes `change` of `r` with its audit line, only if the stream's settings are still those of
 * `r` (the read the change was made from); null if they are not, or the stream is gone.
 */
async function saved(ctx: EngineContext<Ports>, r: ReceiverRecord, change: Partial<Pick<ReceiverRecord, 'endpointUrl' | 'authorization'>> & { stream: string }, what: string): Promise<ReceiverRecord | null> {
  const owner = streamSettingsOf(r.stream).owner ?? '';
  const audit = auditLine(ctx, `ssf:${owner}`, 'receiver.update', `receiver:${r.id}`, 1, what);
  if (!(await ctx.store.updateReceiver(r.id, { ...change, ifStream: r.stream ?? null }, { audit }))) return null;
  return { ...r, ...change };
}

/** SSF §8.1.1.5: deletes a stream the client made, with its pending deliveries. */
export async function deleteStream(ctx: EngineContext<Ports>, clientId: string, streamId: unknown): Promise<void> {
  const r = await getStream(ctx, clientId, streamId, true);
  if (!(await ctx.store.deleteReceiver(r.id, { audit: auditLine(ctx, `ssf:${clientId}`, 'receiver.remove', `receiver:${r.id}`, 1, 'stream deleted') }))) {
    throw new NotFoundError(`no stream with stream_id "${r.id}"`);
  }
}

/** A verification event for the caller to push now (SSF §8.1.4.2, events/verification.ts): its SET's `jti` and the receiver's `state`. */
export interface VerificationToPush {
  jti: string;
  state?: string;
}

/**
 * SSF §8.1.2.2: sets a stream's status (and its reason). A push stream's verification held while
 * it was paused (see {@link requestVerification}) leaves the settings when it is enabled, handed
 * to the caller to push. Disabling a stream drops its verification, push or poll (SSF §8.1.2.1:
 * a disabled stream holds nothing).
 */
export async function setStreamStatus(ctx: EngineContext<Ports>, clientId: string, body: unknown): Promise<{ stream: ReceiverRecord; push?: VerificationToPush }> {
  if (!isObject(body)) throw new InvalidInputError('the request body must be a JSON object (SSF 1.0 §8.1.2.2)');
  await getStream(ctx, clientId, body.stream_id, true);
  if (!STREAM_STATUSES.includes(body.status as StreamStatus)) throw new InvalidInputError(`status must be one of ${STREAM_STATUSES.join(', ')}`);
  if (body.reason !== undefined && (typeof body.reason !== 'string' || body.reason.length > 1024)) throw new InvalidInputError('reason must be a string of at most 1024 characters');
  const status = body.status as StreamStatus;
  const reason = typeof body.reason === 'string' ? { reason: body.reason } : {};
  return untilWritten(body.stream_id, async () => {
    const r = await getStream(ctx, clientId, body.stream_id, true);
    const { reason: _old, verification, ...settings } = streamSettingsOf(r.stream);
    // A poll stream's verification stays until its SET is acknowledged (events/poll.ts); a push stream's goes now.
    const keep = verification !== undefined && status !== 'disabled' && (r.delivery === 'poll' || status === 'paused');
    const next: StreamSettings = { ...settings, status, ...reason, ...(keep ? { verification } : {}) };
    const stream = await saved(ctx, r, { stream: streamJson(next) }, `status ${next.status}`);
    if (stream === null) return null;
    if (verification === undefined || keep || status !== 'enabled') return { stream };
    return { stream, push: { jti: verification.jti, ...(verification.state !== undefined ? { state: verification.state } : {}) } };
  });
}

/**
 * SSF §8.1.4.2: a verification event for a stream the client may read. A poll stream keeps it
 * until the receiver acknowledges its SET (events/poll.ts), answered by no poll while the stream is
 * paused; a push one is handed to the caller to push at once (`push`, events/verification.ts),
 * unless the stream is paused: SSF §8.1.2.1 has the transmitter transmit no event while paused
 * and hold them, and makes no exception for this one, so it is kept in the settings until the
 * stream is enabled ({@link setStreamStatus}), the newest request replacing an older one. A
 * disabled stream transmits nothing and holds nothing (§8.1.2.1): the request is refused
 * (InvalidInputError, 400) before anything is written, so it counts for no interval either.
 */
export async function requestVerification(ctx: EngineContext<Ports>, clientId: string, body: unknown): Promise<{ stream: ReceiverRecord; jti: string; state?: string; push?: VerificationToPush }> {
  if (!isObject(body)) throw new InvalidInputError('the request body must be a JSON object (SSF 1.0 §8.1.4.2)');
  await getStream(ctx, clientId, body.stream_id);
  if (body.state !== undefined && (typeof body.state !== 'string' || body.state.length > 1024)) throw new InvalidInputError('state must be a string of at most 1024 characters');
  const state = typeof body.state === 'string' ? body.state : undefined;
  return untilWritten(body.stream_id, () => verificationOnce(ctx, clientId, body.stream_id, state));
}

/** One try of {@link requestVerification}, from a fresh read of the stream: null if the settings changed before its write. */
async function verificationOnce(ctx: EngineContext<Ports>, clientId: string, streamId: unknown, state: string | undefined): Promise<{ stream: ReceiverRecord; jti: string; state?: string; push?: VerificationToPush } | null> {
  const r = await getStream(ctx, clientId, streamId);
  const now = ctx.clock.now();
  const before = streamSettingsOf(r.stream);
  if (before.status === 'disabled') {
    throw new InvalidInputError(`stream "${r.id}" is disabled, and a disabled stream transmits nothing, a verification event included (SSF 1.0 §8.1.2.1): enable it through POST /ssf/status {"stream_id": "${r.id}", "status": "enabled"}, then ask again`);
  }
  const wait = before.lastVerificationAt === undefined ? 0 : before.lastVerificationAt + MIN_VERIFICATION_INTERVAL_S * 1000 - now;
  if (wait > 0) throw new VerificationTooSoonError(`a verification was asked for less than min_verification_interval (${MIN_VERIFICATION_INTERVAL_S} s) ago: ask again in ${Math.ceil(wait / 1000)} s`, Math.ceil(wait / 1000));
  const jti = newJti(now);
  const held = r.delivery === 'poll' || before.status === 'paused';
  const settings: StreamSettings = { ...before, lastVerificationAt: now, ...(held ? { verification: { jti, ...(state !== undefined ? { state } : {}), at: now } } : {}) };
  // No audit line: a verification changes nothing the operator decided. Only the settings: the endpoint stays as the store has it.
  if (!(await ctx.store.updateReceiver(r.id, { stream: streamJson(settings), ifStream: r.stream ?? null }, {}))) return null;
  const wanted = { jti, ...(state !== undefined ? { state } : {}) };
  return { stream: r, ...wanted, ...(held ? {} : { push: wanted }) };
}

/** A stream that cannot be made (SSF §8.1.1.1: 409), as InvalidInputError for every other caller. */
export class StreamConflictError extends InvalidInputError {}

/** A verification sooner than min_verification_interval after the last (SSF §8.1.4.2: 429), with the seconds to wait. */
export class VerificationTooSoonError extends InvalidInputError {
  constructor(message: string, readonly retryAfterS: number) {
    super(message);
  }
}
