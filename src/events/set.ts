import { CompactSign } from 'jose';
import type { RevocationEvent } from '../store/store.js';
import { SET_ALG, type SigningKey } from './keys.js';

/** The one event type tokenctl emits (its `events` member's key). */
export const TOKENS_REVOKED = 'urn:tokenctl:secevent:tokens-revoked';
/** RFC 8417 §2.3: the media type of a SET's `typ` header, short form. */
export const SET_TYP = 'secevent+jwt';

/** The payload of `urn:tokenctl:secevent:tokens-revoked`: what a receiver drops from its cache. */
export interface TokensRevokedPayload {
  scope: RevocationEvent['scope'];
  reason: RevocationEvent['reason'];
  jti?: string;
  token_type?: string;
  grant_id?: string;
  username?: string;
  client_id?: string;
}

/** The claims of one SET (RFC 8417 §2.2; `sub_id` RFC 9493 / OpenID SSF 1.0, `toe` SSF's time of event). */
export interface SetClaims {
  iss: string;
  iat: number;
  jti: string;
  aud: string;
  toe: number;
  sub_id: { format: 'opaque'; id: string };
  events: { [TOKENS_REVOKED]: TokensRevokedPayload };
}

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

/** The claims of the SET telling `audience` of `event`, signed at `now` (ms). */
export function setClaims(event: RevocationEvent, issuer: string, audience: string, now: number): SetClaims {
  const payload: TokensRevokedPayload = { scope: event.scope, reason: event.reason };
  if (event.jti !== undefined) payload.jti = event.jti;
  if (event.tokenType !== undefined) payload.token_type = event.tokenType;
  if (event.grantId !== undefined) payload.grant_id = event.grantId;
  if (event.username !== undefined) payload.username = event.username;
  if (event.clientId !== undefined) payload.client_id = event.clientId;
  return {
    iss: issuer,
    iat: seconds(now),
    jti: event.id,
    aud: audience,
    toe: seconds(event.at),
    sub_id: { format: 'opaque', id: subjectOf(event) },
    events: { [TOKENS_REVOKED]: payload },
  };
}

const encoder = new TextEncoder();

/** The SET as a compact JWS, header `{"alg":"ES256","kid":…,"typ":"secevent+jwt"}` (RFC 8417 §2.3). */
export async function signSet(event: RevocationEvent, issuer: string, audience: string, key: SigningKey, now: number): Promise<string> {
  return new CompactSign(encoder.encode(JSON.stringify(setClaims(event, issuer, audience, now))))
    .setProtectedHeader({ alg: SET_ALG, kid: key.kid, typ: SET_TYP })
    .sign(key.key);
}
