/**
 * A revocation as a Security Event Token carries it (RFC 8417 §2.2 `events`; docs/events.md "The
 * SET"), its one JSON writer, and the prepared form a store may hand a delivery's revocations out
 * in. Shared by the stores that write the outbox and by the SET writer (events/set.ts); not part
 * of the store contract (store.ts, ports/): a store that keeps events as objects needs none of it.
 */

import type { RevocationEvent, RevocationReason } from './event-records.js';

/**
 * One revocation as a SET tells it (events/set.ts): an event's members but its id, snake_case,
 * less what goes without saying (docs/events.md "The SET"): `reason` only when it is not
 * `revoked`, and `token_type` only when `scope` does not say it (a `token` event is always of an
 * access token: a refresh token's revocation ends its grant). A SET under load carries a thousand
 * of these, and every byte of them is written to the outbox, read back, encoded, hashed and sent.
 * Here, beside the event, so that a store can keep events in this form
 * (see PreparedRevocations).
 */
export interface RevocationClaim {
  scope: RevocationEvent['scope'];
  /** Absent: `revoked`. */
  reason?: RevocationEvent['reason'];
  jti?: string;
  /** Absent on a `token` event: `access_token`. */
  token_type?: string;
  grant_id?: string;
  username?: string;
  client_id?: string;
  /** When it took effect (ms). */
  at: number;
}

/** The reason a claim leaves out. */
const USUAL_REASON: RevocationReason = 'revoked';
/** Whether a claim leaves the event's token type out: the one a `token` event always has. */
const typeGoesWithoutSaying = (event: RevocationEvent): boolean => event.scope === 'token' && event.tokenType === 'access_token';

/** An event as its {@link RevocationClaim}. */
export function revocationClaim(event: RevocationEvent): RevocationClaim {
  // One object literal of one shape for every event (a SET of a thousand revocations builds a
  // thousand): the members an event lacks are undefined here, and JSON leaves them out.
  return {
    scope: event.scope,
    reason: event.reason === USUAL_REASON ? undefined : event.reason,
    jti: event.jti,
    token_type: typeGoesWithoutSaying(event) ? undefined : event.tokenType,
    grant_id: event.grantId,
    username: event.username,
    client_id: event.clientId,
    at: event.at,
  };
}

/** The strings JSON writes as they are between quotes: printable ASCII but `"` and `\`. */
const VERBATIM = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;
/** `JSON.stringify(s)`, the same text; a string JSON writes as it is just goes between quotes. */
export const jsonString = (s: string): string => (VERBATIM.test(s) ? `"${s}"` : JSON.stringify(s));

/**
 * `JSON.stringify(revocationClaim(event))`, the same text, written directly: the one writer of a
 * revocation's JSON, for the SQLite store (one per revocation inside its commit) and for the SET
 * writer (events/set.ts). It costs half of what building the object and stringifying it does;
 * a test holds the two to the same text.
 */
export function revocationClaimJson(event: RevocationEvent): string {
  let json = `{"scope":${jsonString(event.scope)}`;
  if (event.reason !== USUAL_REASON && event.reason !== undefined) json += `,"reason":${jsonString(event.reason)}`;
  if (event.jti !== undefined) json += `,"jti":${jsonString(event.jti)}`;
  if (event.tokenType !== undefined && !typeGoesWithoutSaying(event)) json += `,"token_type":${jsonString(event.tokenType)}`;
  if (event.grantId !== undefined) json += `,"grant_id":${jsonString(event.grantId)}`;
  if (event.username !== undefined) json += `,"username":${jsonString(event.username)}`;
  if (event.clientId !== undefined) json += `,"client_id":${jsonString(event.clientId)}`;
  return `${json},"at":${Number.isFinite(event.at) ? event.at : null}}`;
}

/** The time of the latest of `events` (ms): a SET's `toe`, an outbox row's second line. */
export function latestAtOf(events: readonly RevocationEvent[]): number {
  let latest = -Infinity;
  for (const e of events) if (e.at > latest) latest = e.at;
  return latest;
}

/** The event of a {@link RevocationClaim} and its id. */
export function eventOfClaim(id: string, c: RevocationClaim): RevocationEvent {
  const e: RevocationEvent = { id, at: c.at, reason: c.reason ?? USUAL_REASON, scope: c.scope };
  if (c.jti !== undefined) e.jti = c.jti;
  if (c.token_type !== undefined) e.tokenType = c.token_type as RevocationEvent['tokenType'];
  else if (c.scope === 'token') e.tokenType = 'access_token';
  if (c.grant_id !== undefined) e.grantId = c.grant_id;
  if (c.username !== undefined) e.username = c.username;
  if (c.client_id !== undefined) e.clientId = c.client_id;
  return e;
}

/**
 * A delivery's revocations as a store that keeps them as text hands them out: the JSON of their
 * {@link RevocationClaim}s, ready to go into a SET without being parsed and written again (a poll
 * answer carries hundreds of revocations under load; that round trip was the largest part of what
 * it cost). Carried by the delivery out of sight ({@link preparedRevocations}): what a delivery is
 * stays its id, events and attempts.
 */
export interface PreparedRevocations {
  /**
   * The revocations' claims, JSON objects separated by commas, oldest first, in pieces (a store's
   * rows): joined by commas, the pieces are the list. Kept apart, a SET's writer copies each piece
   * where it goes, with no string of them all. As UTF-8 bytes, as the store read them: no string
   * of a row is made.
   */
  parts: readonly Uint8Array[];
  /** How many. */
  count: number;
  /** The latest revocation's time (ms). */
  latestAt: number;
}

const PREPARED = Symbol('prepared revocations');

/** Gives `delivery` its prepared revocations (a property that is not enumerable: equality, JSON and copies ignore it). */
export function withPreparedRevocations<D extends object>(delivery: D, prepared: PreparedRevocations): D {
  Object.defineProperty(delivery, PREPARED, { value: prepared, enumerable: false });
  return delivery;
}

/** The prepared revocations a store gave `delivery`, if any. */
export function preparedRevocations(delivery: object): PreparedRevocations | undefined {
  return (delivery as { [PREPARED]?: PreparedRevocations })[PREPARED];
}
