import { sign } from 'node:crypto';
import type { Delivery, RevocationEvent } from '../store/store.js';
import { latestAtOf, preparedRevocations, revocationClaim, revocationClaimJson, type RevocationClaim } from '../store/revocation-claims.js';
import { ByteWriter } from './bytes.js';
import { SET_ALG } from '../engine/signing-keys.js';
import type { SigningKey } from './keys.js';

/** The one event type tokenctl emits (its `events` member's key). */
export const TOKENS_REVOKED = 'urn:tokenctl:secevent:tokens-revoked';
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
 * The claims of one SET (RFC 8417 §2.2; `sub_id` RFC 9493 / OpenID SSF 1.0, `toe` SSF's time of
 * event). `sub_id` only when the SET carries one revocation: a SET of several has no one subject.
 */
export interface SetClaims {
  iss: string;
  iat: number;
  jti: string;
  aud: string;
  toe: number;
  sub_id?: { format: 'opaque'; id: string };
  events: { [TOKENS_REVOKED]: TokensRevokedPayload };
}

/** What a SET is made of: a delivery's id (its `jti`) and its events, oldest first. */
export type SetContent = Pick<Delivery, 'id' | 'events'>;

const seconds = (ms: number): number => Math.floor(ms / 1000);

/**
 * The subject the event is about: the token for scope `token`, the grant, the user or the client
 * (RFC 9493 opaque identifier).
 */
function subjectOf(event: RevocationEvent): string {
  const id = { token: event.jti, grant: event.grantId, user: event.username, client: event.clientId }[event.scope];
  if (id === undefined) throw new Error(`event ${event.id} of scope ${event.scope} names no subject`);
  return id;
}

/**
 * The claims of the SET telling `audience` of a delivery's events, signed at `now` (ms): `jti` the
 * delivery's id, `toe` the latest revocation's time (every one in it had taken effect by then),
 * `sub_id` only for a single revocation.
 */
export function setClaims(content: SetContent, issuer: string, audience: string, now: number): SetClaims {
  const { latestAt, subject } = summaryOf(content);
  return claimsOf(content.id, issuer, audience, now, latestAt, subject, content.events.map(revocationClaim));
}

/** A delivery's latest revocation time, and the subject of its revocation when it has one only; none is an error. */
function summaryOf({ id, events }: SetContent): { latestAt: number; subject: string | undefined } {
  if (events.length === 0) throw new Error(`delivery ${id} has no events`);
  return { latestAt: latestAtOf(events), subject: events.length === 1 ? subjectOf(events[0]!) : undefined };
}

/** The claims of a SET, in their order; `subject` (sub_id) only for a single revocation. */
function claimsOf(id: string, issuer: string, audience: string, now: number, latestAt: number, subject: string | undefined, revocations: RevocationClaim[]): SetClaims {
  return {
    iss: issuer,
    iat: seconds(now),
    jti: id,
    aud: audience,
    toe: seconds(latestAt),
    ...(subject !== undefined ? { sub_id: { format: 'opaque' as const, id: subject } } : {}),
    events: { [TOKENS_REVOKED]: { revocations } },
  };
}

/** How the JSON of claims whose revocations are empty ends: `events` is the last member, its revocations its last. */
const NO_REVOCATIONS = '[]}}}';

/**
 * `JSON.stringify(setClaims(...))`, the same text. The revocations' JSON has one writer,
 * `revocationClaimJson`: a store that prepared it (store/events.ts PreparedRevocations, for a
 * delivery of several revocations) wrote it at its commit, and it goes in as it is; otherwise it
 * is written here from the events. The claims around it are written with no revocations.
 */
export function setClaimsJson(content: SetContent, issuer: string, audience: string, now: number): string {
  return writeClaimsJson(new ByteWriter(), content, issuer, audience, now).view().toString('utf8');
}

/** Appends {@link setClaimsJson}'s text to `out`, as UTF-8. */
function writeClaimsJson(out: ByteWriter, content: SetContent, issuer: string, audience: string, now: number): ByteWriter {
  const prepared = preparedRevocations(content);
  // One revocation (its subject is the SET's sub_id) or a delivery its store did not prepare: from its events.
  const fromEvents = prepared === undefined || prepared.count < 2;
  const { latestAt, subject } = fromEvents ? summaryOf(content) : { latestAt: prepared.latestAt, subject: undefined };
  const empty = JSON.stringify(claimsOf(content.id, issuer, audience, now, latestAt, subject, []));
  out.utf8(empty.slice(0, -NO_REVOCATIONS.length)).latin1('[');
  const comma = (i: number) => (i === 0 ? out : out.latin1(','));
  if (fromEvents) content.events.forEach((e, i) => comma(i).utf8(revocationClaimJson(e)));
  else prepared.parts.forEach((part, i) => comma(i).bytes(part));
  return out.latin1(']}}}');
}

/** The protected header of the SETs signed with a key, base64url: `{"alg":"ES256","kid":…,"typ":"secevent+jwt"}` (RFC 8417 §2.3). */
const headers = new WeakMap<SigningKey, string>();
function headerOf(key: SigningKey): string {
  let header = headers.get(key);
  if (header === undefined) {
    header = Buffer.from(JSON.stringify({ alg: SET_ALG, kid: key.kid, typ: SET_TYP })).toString('base64url');
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
export function writeSet(out: ByteWriter, content: SetContent, issuer: string, audience: string, key: SigningKey, now: number): void {
  const claims = writeClaimsJson(claimsScratch.reset(), content, issuer, audience, now);
  const start = out.length;
  out.latin1(headerOf(key)).latin1('.').base64url(claims.view());
  claims.reset();
  const signature = sign('sha256', out.view(start), { key: key.key, dsaEncoding: 'ieee-p1363' });
  out.latin1('.').latin1(signature.toString('base64url'));
}

/** The SET of a delivery as a compact JWS, header `{"alg":"ES256","kid":…,"typ":"secevent+jwt"}` (RFC 8417 §2.3). */
export async function signSet(content: SetContent, issuer: string, audience: string, key: SigningKey, now: number): Promise<string> {
  writeSet(setScratch.reset(), content, issuer, audience, key, now);
  return setScratch.view().toString('latin1');
}
