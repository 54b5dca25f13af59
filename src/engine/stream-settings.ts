import { InvalidInputError, ServiceUnavailableError } from './errors.js';
import { isSetAlg, SET_ALG, type SetAlg } from './signing-keys.js';

/**
 * What a receiver's stream is set to (OpenID SSF 1.0 §8.1.1): the events it asked for, the
 * algorithm its SETs are signed with, its status (§8.1.2), the client that manages it through
 * the SSF API, and a verification asked for and not yet delivered (§8.1.4). Kept as JSON beside
 * the receiver (ReceiverRecord.stream); a receiver without it has the defaults.
 */

/** tokenctl's own event: every revocation, in detail (docs/events.md "The SET"). */
export const TOKENS_REVOKED = 'urn:tokenctl:secevent:tokens-revoked';
/** CAEP 1.0 §3.1: a session ended. Told of every revocation that ends a grant, a user's or a client's tokens. */
export const SESSION_REVOKED = 'https://schemas.openid.net/secevent/caep/event-type/session-revoked';
/** SSF 1.0 §8.1.4.1: the verification event, sent when a receiver asks, whatever it requested. */
export const VERIFICATION = 'https://schemas.openid.net/secevent/ssf/event-type/verification';

/** SSF `events_supported`: what a stream may request. */
export const EVENTS_SUPPORTED: readonly string[] = [TOKENS_REVOKED, SESSION_REVOKED];
/** What a receiver the operator added gets unless it says otherwise (what it always got). */
export const DEFAULT_EVENTS: readonly string[] = [TOKENS_REVOKED];

/** SSF 1.0 §8.1.2 stream status. */
export type StreamStatus = 'enabled' | 'paused' | 'disabled';
export const STREAM_STATUSES: readonly StreamStatus[] = ['enabled', 'paused', 'disabled'];

export interface StreamSettings {
  /** SSF `events_requested`, as the receiver asked (any URIs). */
  eventsRequested: string[];
  alg: SetAlg;
  status: StreamStatus;
  /** Why the status is what it is (SSF §8.1.2 `reason`), when someone said. */
  reason?: string;
  description?: string;
  /** The client that created it through the SSF API (its streams are its own), or none: the operator's. */
  owner?: string;
  /** A verification event asked for, until it is delivered: its SET's `jti`, the receiver's `state`, when asked (ms). */
  verification?: { jti: string; state?: string; at: number };
  /** When a verification was last asked for (ms), for {@link MIN_VERIFICATION_INTERVAL_S}. */
  lastVerificationAt?: number;
}

/**
 * SSF 1.0 §8.1.1 `min_verification_interval` (seconds), advertised in every stream's
 * configuration: a verification asked for sooner after the last one is refused with 429
 * (§8.1.4.2), so that a receiver cannot make tokenctl sign and push SETs at its will.
 */
export const MIN_VERIFICATION_INTERVAL_S = 15;

/** SSF `events_delivered`: the supported events the stream requested, in the order of {@link EVENTS_SUPPORTED}. */
export function eventsDelivered(s: Pick<StreamSettings, 'eventsRequested'>): string[] {
  return EVENTS_SUPPORTED.filter((e) => s.eventsRequested.includes(e));
}

/** The settings of a receiver (its JSON, or none: the defaults). A value that does not parse reads as the defaults too. */
export function streamSettingsOf(stream: string | null | undefined): StreamSettings {
  const defaults: StreamSettings = { eventsRequested: [...DEFAULT_EVENTS], alg: SET_ALG, status: 'enabled' };
  if (!stream) return defaults;
  let parsed: Partial<StreamSettings>;
  try {
    parsed = JSON.parse(stream) as Partial<StreamSettings>;
  } catch {
    return defaults;
  }
  return {
    eventsRequested: Array.isArray(parsed.eventsRequested) ? parsed.eventsRequested.filter((e) => typeof e === 'string') : defaults.eventsRequested,
    alg: isSetAlg(parsed.alg) ? parsed.alg : SET_ALG,
    status: STREAM_STATUSES.includes(parsed.status as StreamStatus) ? (parsed.status as StreamStatus) : 'enabled',
    ...(typeof parsed.reason === 'string' ? { reason: parsed.reason } : {}),
    ...(typeof parsed.description === 'string' ? { description: parsed.description } : {}),
    ...(typeof parsed.owner === 'string' ? { owner: parsed.owner } : {}),
    ...(parsed.verification && typeof parsed.verification.jti === 'string' ? { verification: parsed.verification } : {}),
    ...(typeof parsed.lastVerificationAt === 'number' ? { lastVerificationAt: parsed.lastVerificationAt } : {}),
  };
}

/**
 * SSF 1.0 §8.1.1 `events_requested`, checked as the stream API and `receiver add/update --events`
 * both check it: an array of at most 64 URIs of at most 512 characters (any URIs: those not
 * supported are simply not delivered), duplicates dropped. `name`: how the caller calls it.
 */
export function checkEventsRequested(value: unknown, name = 'events_requested'): string[] {
  if (!Array.isArray(value) || value.length > 64 || !value.every((x) => typeof x === 'string' && x !== '' && x.length <= 512)) {
    throw new InvalidInputError(`${name} must be a list of at most 64 event type URIs (supported: ${EVENTS_SUPPORTED.join(', ')})`);
  }
  return [...new Set(value as string[])];
}

/** The algorithm of a stream's SETs (ES256 or RS256, the CAEP interoperability profile's), checked. */
export function checkAlg(value: unknown, name = 'signing_alg'): SetAlg {
  if (!isSetAlg(value)) throw new InvalidInputError(`${name} must be ES256 or RS256`);
  return value;
}

/** The JSON a receiver keeps of its settings. */
export const streamJson = (s: StreamSettings): string => JSON.stringify(s);

/** Which of its events a stream's SETs carry. */
export interface EventSelection {
  tokenctl: boolean;
  caep: boolean;
}

/**
 * The events a receiver's SETs carry, from its stream settings. A `disabled` stream carries none
 * (SSF 1.0 §8.1.2: nothing is transmitted, nothing held): its deliveries are settled unsent.
 */
export function eventSelection(stream: string | null | undefined): EventSelection {
  const settings = streamSettingsOf(stream);
  if (settings.status === 'disabled') return { tokenctl: false, caep: false };
  const delivered = eventsDelivered(settings);
  return { tokenctl: delivered.includes(TOKENS_REVOKED), caep: delivered.includes(SESSION_REVOKED) };
}

/** How many times a read-modify-write of a stream's settings (a write only over what it read) is tried before it gives up. */
export const STREAM_WRITE_TRIES = 5;

/**
 * Runs `attempt` (a read of the stream, a decision made from it, a write conditional on that
 * read) until its write lands. An attempt whose write found the settings changed since its read
 * returns null and is run again from a fresh read, so that a concurrent change (a disable) is
 * never written over and the decision is remade on what is there now. After STREAM_WRITE_TRIES,
 * ServiceUnavailableError: the stream kept changing `while` (what was being done), `retry` (what to do).
 */
export async function untilWritten<T>(streamId: unknown, attempt: (tryIndex: number) => Promise<T | null>, during = 'this request was made', retry = 'send the request again'): Promise<T> {
  for (let i = 0; i < STREAM_WRITE_TRIES; i++) {
    const done = await attempt(i);
    if (done !== null) return done;
  }
  throw new ServiceUnavailableError(`stream "${String(streamId)}" kept changing while ${during} (${STREAM_WRITE_TRIES} tries): ${retry}`);
}
