import { sign } from 'node:crypto';
import type { Delivery } from '../store/store.js';
import { latestAtOf, preparedRevocations, revocationClaim, revocationClaimJson, type RevocationClaim } from '../store/revocation-claims.js';
import { SESSION_REVOKED, TOKENS_REVOKED, VERIFICATION, type EventSelection } from '../engine/stream-settings.js';
import { ByteWriter } from './bytes.js';
import { endsSession, revocationSubject, sessionRevoked, sessionSubject, severalSubjects, type SessionRevokedPayload, type SubjectId } from './caep.js';
import type { SigningKey } from './keys.js';

/** tokenctl's own event type (its `events` member's key); CAEP `session-revoked` beside it for the streams that ask. */
export { SESSION_REVOKED, TOKENS_REVOKED, VERIFICATION };
/** RFC 8417 §2.3: the media type of a SET's `typ` header, short form. */
export const SET_TYP = 'secevent+jwt';

/** One revocation of a SET: what a receiver drops from its cache (snake_case of RevocationEvent; defined beside it). */
export type { RevocationClaim };
export { revocationClaim };

/** The payload of `urn:tokenctl:secevent:tokens-revoked`: the revocations, oldest first, at least one. */
export interface TokensRevokedPayload {
  revocations: RevocationClaim[];
}

/**
 * The claims of one SET (RFC 8417 §2.2; `toe` SSF's time of event; `txn` RFC 8417 §2.2 / SSF
 * 1.0 §4.1.4, the originating change; `sub_id` RFC 9493 / SSF 1.0 §3, on every SET).
 */
export interface SetClaims {
  iss: string;
  iat: number;
  jti: string;
  aud: string;
  toe: number;
  txn: string;
  sub_id: SubjectId;
  events: { [SESSION_REVOKED]?: SessionRevokedPayload; [TOKENS_REVOKED]?: TokensRevokedPayload };
}

/** What a SET is made of: a delivery's id (its `jti`) and its events, oldest first. */
export type SetContent = Pick<Delivery, 'id' | 'events'>;

/** What a receiver the operator added gets: tokenctl's own event only (as it always did). */
export const TOKENCTL_ONLY: EventSelection = { tokenctl: true, caep: false };

const seconds = (ms: number): number => Math.floor(ms / 1000);

/**
 * Whether a delivery has anything for a stream that asked for `selection`: a stream of CAEP
 * `session-revoked` alone has nothing in the revocation of one access token (no session ended).
 * A delivery with nothing for its stream is settled without a SET (deliverer, poll).
 */
export function hasEventsFor(content: SetContent, selection: EventSelection = TOKENCTL_ONLY): boolean {
  return selection.tokenctl || (selection.caep && content.events.some(endsSession));
}

/**
 * The claims of the SET telling `audience` of a delivery's events, signed at `now` (ms): `jti` and
 * `txn` the delivery's id (a revocation's event id, the same for every receiver and every retry:
 * receivers de-duplicate by it), `toe` the latest revocation's time (every one in it had taken
 * effect by then), `sub_id` the subject (see {@link claimsFrame}).
 */
export function setClaims(content: SetContent, issuer: string, audience: string, now: number, selection: EventSelection = TOKENCTL_ONLY): SetClaims {
  const frame = claimsFrame(content, issuer, audience, now, selection, summaryOf(content).latestAt);
  if (selection.tokenctl) frame.events[TOKENS_REVOKED] = { revocations: content.events.map(revocationClaim) };
  return frame;
}

/** A delivery's latest revocation time; none is an error. */
function summaryOf({ id, events }: SetContent): { latestAt: number } {
  if (events.length === 0) throw new Error(`delivery ${id} has no events`);
  return { latestAt: latestAtOf(events) };
}

/** How many revocations a delivery has, without decoding what a store prepared. */
function countOf(content: SetContent): number {
  return preparedRevocations(content)?.count ?? content.events.length;
}

/**
 * The claims of a SET but tokenctl's revocations, in their order. `sub_id`:
 * - with CAEP `session-revoked`: the session's complex subject (events/caep.ts), or RFC 9493
 *   aliases of each when the SET ends several sessions;
 * - tokenctl's own event alone: one revocation's opaque subject (its token, grant, user or
 *   client); for several, an opaque identifier of the SET's originating change, its `txn` (their
 *   subjects are in the revocations; naming each again would double what a SET of a thousand costs).
 */
function claimsFrame(content: SetContent, issuer: string, audience: string, now: number, selection: EventSelection, latestAt: number): SetClaims {
  const sessions = selection.caep ? content.events.filter(endsSession) : [];
  let subject: SubjectId;
  if (sessions.length > 0) subject = severalSubjects(sessions.map(sessionSubject));
  else if (countOf(content) === 1) subject = revocationSubject(content.events[0]!);
  else subject = { format: 'opaque', id: content.id };
  const events: SetClaims['events'] = {};
  if (sessions.length > 0) events[SESSION_REVOKED] = sessionRevoked(sessions);
  return { iss: issuer, iat: seconds(now), jti: content.id, aud: audience, toe: seconds(latestAt), txn: content.id, sub_id: subject, events };
}

/** How the JSON of claims whose revocations are empty ends: `events` is the last member, tokenctl's event its last, its revocations its last. */
const NO_REVOCATIONS = '[]}}}';

/**
 * `JSON.stringify(setClaims(...))`, the same text. The revocations' JSON has one writer,
 * `revocationClaimJson`: a store that prepared it (store/events.ts PreparedRevocations, for a
 * delivery of several revocations) wrote it at its commit, and it goes in as it is; otherwise it
 * is written here from the events. The claims around it are written with no revocations.
 */
export function setClaimsJson(content: SetContent, issuer: string, audience: string, now: number, selection: EventSelection = TOKENCTL_ONLY): string {
  return writeClaimsJson(new ByteWriter(), content, issuer, audience, now, selection).view().toString('utf8');
}

/** Appends {@link setClaimsJson}'s text to `out`, as UTF-8. */
function writeClaimsJson(out: ByteWriter, content: SetContent, issuer: string, audience: string, now: number, selection: EventSelection): ByteWriter {
  const prepared = preparedRevocations(content);
  // One revocation or a delivery its store did not prepare: from its events.
  const fromEvents = prepared === undefined || prepared.count < 2;
  const latestAt = fromEvents ? summaryOf(content).latestAt : prepared.latestAt;
  const frame = claimsFrame(content, issuer, audience, now, selection, latestAt);
  if (!selection.tokenctl) return out.utf8(JSON.stringify(frame));
  frame.events[TOKENS_REVOKED] = { revocations: [] };
  const empty = JSON.stringify(frame);
  out.utf8(empty.slice(0, -NO_REVOCATIONS.length)).latin1('[');
  const comma = (i: number) => (i === 0 ? out : out.latin1(','));
  if (fromEvents) content.events.forEach((e, i) => comma(i).utf8(revocationClaimJson(e)));
  else prepared.parts.forEach((part, i) => comma(i).bytes(part));
  return out.latin1(']}}}');
}

/**
 * The claims of an SSF 1.0 §8.1.4.1 verification event: its subject the stream (opaque, as the
 * CAEP interoperability profile has it), `state` as the receiver sent it.
 */
export function verificationClaims(jti: string, issuer: string, audience: string, streamId: string, state: string | undefined, now: number): Record<string, unknown> {
  return { iss: issuer, iat: seconds(now), jti, aud: audience, txn: jti, sub_id: { format: 'opaque', id: streamId }, events: { [VERIFICATION]: state !== undefined ? { state } : {} } };
}

/** A SET of claims already made (a verification event), signed by `key`. */
export function signClaims(claims: Record<string, unknown>, key: SigningKey): string {
  const out = new ByteWriter();
  out.latin1(headerOf(key)).latin1('.').base64url(Buffer.from(JSON.stringify(claims), 'utf8'));
  const signature = signatureOf(out.view(), key);
  return out.latin1('.').latin1(signature.toString('base64url')).view().toString('latin1');
}

/** ES256's signature is r || s (ieee-p1363), not DER; RS256's is PKCS #1 v1.5 (RFC 7518 §3.3). */
function signatureOf(data: Uint8Array, key: SigningKey): Buffer {
  return key.alg === 'RS256' ? sign('sha256', data, key.key) : sign('sha256', data, { key: key.key, dsaEncoding: 'ieee-p1363' });
}

/** The protected header of the SETs signed with a key, base64url: `{"alg":…,"kid":…,"typ":"secevent+jwt"}` (RFC 8417 §2.3). */
const headers = new WeakMap<SigningKey, string>();
function headerOf(key: SigningKey): string {
  let header = headers.get(key);
  if (header === undefined) {
    header = Buffer.from(JSON.stringify({ alg: key.alg, kid: key.kid, typ: SET_TYP })).toString('base64url');
    headers.set(key, header);
  }
  return header;
}

/** The claims' JSON of the SET being written: kept from SET to SET (writeSet is synchronous). */
const claimsScratch = new ByteWriter();
/** A SET made into a string by {@link signSet}. */
const setScratch = new ByteWriter();

/**
 * Appends the SET of a delivery, a compact JWS (RFC 7515 §7.1: base64url parts and dots, ASCII),
 * to `out`: its claims' JSON and their base64url are written into memory kept from SET to SET,
 * and the signature is over `out`'s own bytes, so that a SET of a thousand revocations (~250 kB)
 * makes no string or buffer of its size. Signed with node:crypto: ES256's
 * signature is r || s (ieee-p1363), not DER. jose's WebCrypto path costs four times as much per
 * SET, and a busy server signs hundreds a second; the tests verify these SETs with jose against
 * the JWKS.
 */
export function writeSet(out: ByteWriter, content: SetContent, issuer: string, audience: string, key: SigningKey, now: number, selection: EventSelection = TOKENCTL_ONLY): void {
  const claims = writeClaimsJson(claimsScratch.reset(), content, issuer, audience, now, selection);
  const start = out.length;
  out.latin1(headerOf(key)).latin1('.').base64url(claims.view());
  claims.reset();
  const signature = signatureOf(out.view(start), key);
  out.latin1('.').latin1(signature.toString('base64url'));
}

/** The SET of a delivery as a compact JWS, header `{"alg":…,"kid":…,"typ":"secevent+jwt"}` (RFC 8417 §2.3). */
export async function signSet(content: SetContent, issuer: string, audience: string, key: SigningKey, now: number, selection: EventSelection = TOKENCTL_ONLY): Promise<string> {
  writeSet(setScratch.reset(), content, issuer, audience, key, now, selection);
  return setScratch.view().toString('latin1');
}
