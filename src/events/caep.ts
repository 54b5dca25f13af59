import type { RevocationEvent } from '../store/store.js';

/**
 * How a revocation is told to a receiver that speaks CAEP 1.0 (`session-revoked`, §3.1) and the
 * subject identifiers of SSF 1.0 §3 / RFC 9493: what a SET's `sub_id` says (events/set.ts).
 */

/** An RFC 9493 subject identifier, or an SSF 1.0 §3.2 complex subject. */
export type SubjectId = { format: string } & Record<string, unknown>;

const opaque = (id: string): SubjectId => ({ format: 'opaque', id });

/**
 * The subject of tokenctl's own event of one revocation (RFC 9493 §3.2.4 opaque): the token for
 * scope `token`, the grant, the user or the client.
 */
export function revocationSubject(event: RevocationEvent): SubjectId {
  const id = { token: event.jti, grant: event.grantId, user: event.username, client: event.clientId }[event.scope];
  if (id === undefined) throw new Error(`event ${event.id} of scope ${event.scope} names no subject`);
  return opaque(id);
}

/** Whether a revocation ends a session (CAEP's word for a grant): every scope but one access token alone. */
export const endsSession = (event: RevocationEvent): boolean => event.scope !== 'token';

/**
 * The subject of a revocation that ends sessions, as an SSF 1.0 §3.2 complex subject: `session`
 * the grant, `user` the user (by name: the event carries no `sub`), `application` the client. A
 * receiver ends every session that matches all the members it names (a user's revocation at one
 * client: that user's sessions of that client).
 */
export function sessionSubject(event: RevocationEvent): SubjectId {
  const s: SubjectId = { format: 'complex' };
  if (event.scope === 'grant' && event.grantId !== undefined) s.session = opaque(event.grantId);
  if (event.username !== undefined) s.user = opaque(event.username);
  if (event.clientId !== undefined) s.application = opaque(event.clientId);
  return s;
}

/**
 * The `sub_id` of several subjects (a SET that tells of several revocations): RFC 9493 §3.2.1
 * aliases of each distinct one. A receiver that acts on any subject it recognises among them acts
 * on each (documented in docs/events.md: the subjects are several, not one with several names).
 */
export function severalSubjects(subjects: SubjectId[]): SubjectId {
  const seen = new Map<string, SubjectId>();
  for (const s of subjects) seen.set(JSON.stringify(s), s);
  return seen.size === 1 ? subjects[0]! : { format: 'aliases', identifiers: [...seen.values()] };
}

/** The payload of CAEP `session-revoked` (CAEP 1.0 §2 common claims, §3.1). */
export interface SessionRevokedPayload {
  /** When it took effect: the latest of the revocations it tells of, NumericDate (seconds). */
  event_timestamp: number;
  /** CAEP §2: who or what caused it, when tokenctl knows (a client's revocation could be either its user's or its own). */
  initiating_entity?: 'admin' | 'user' | 'policy' | 'system';
  /** CAEP §2, a language tag to a message; the CAEP interoperability profile asks it non-empty. */
  reason_admin: { en: string };
}

/** Why, in words, for `reason_admin`. */
function reasonOf(e: RevocationEvent): string {
  const whose = [e.username !== undefined ? `user ${e.username}` : '', e.clientId !== undefined ? `client ${e.clientId}` : ''].filter(Boolean).join(' at ');
  if (e.reason === 'reuse_detected') return `refresh token reuse detected: grant ${e.grantId ?? ''} of ${whose} revoked`;
  if (e.reason === 'client_deleted') return `client ${e.clientId ?? ''} deleted: every token issued to it revoked`;
  return e.scope === 'grant' ? `grant ${e.grantId ?? ''} of ${whose} revoked` : `every token of ${whose} revoked`;
}

/** CAEP `session-revoked` for these session-ending revocations (at least one). */
export function sessionRevoked(sessions: readonly RevocationEvent[]): SessionRevokedPayload {
  let latest = -Infinity;
  for (const e of sessions) if (e.at > latest) latest = e.at;
  const reasons = new Set(sessions.map((e) => e.reason));
  const only = reasons.size === 1 ? sessions[0]!.reason : undefined;
  const initiating = only === 'reuse_detected' ? 'policy' : only === 'client_deleted' ? 'admin' : undefined;
  const text = sessions.length === 1 ? reasonOf(sessions[0]!) : `${sessions.length} sessions revoked: ${sessions.slice(0, 3).map(reasonOf).join('; ')}${sessions.length > 3 ? '; …' : ''}`;
  return { event_timestamp: Math.floor(latest / 1000), ...(initiating ? { initiating_entity: initiating } : {}), reason_admin: { en: `tokenctl: ${text}` } };
}
