/**
 * The records of the authorization code flow (contract 5): one authorization request from its
 * arrival at `GET /oauth/authorize` to the redemption of its code. Secrets of the flow (the login
 * challenge, the login verifier, the browser's cookie, the code) are stored as SHA-256 digests
 * only, as tokens are. All times are integer milliseconds since the Unix epoch.
 */

/** Where an authorization request stands. */
export type AuthorizationStatus =
  /** Waiting for the login app's answer. */
  | 'pending'
  /** The login app accepted it: a code may be issued once. */
  | 'accepted'
  /** The login app rejected it: the client is told the error. */
  | 'rejected';

/** One authorization request (RFC 6749 §4.1.1, RFC 7636 §4.3) and what became of it. */
export interface AuthorizationRecord {
  /** UUID, for the audit trail and the store's own keys. */
  id: string;
  /** Digest of the `login_challenge` handed to the login app. */
  challengeDigest: string;
  /** Digest of the cookie set on the browser that started it: the browser that must finish it. */
  browserDigest: string;
  clientId: string;
  /** The redirect URI the code goes to: the one sent, or the client's only one. */
  redirectUri: string;
  /** Whether `redirect_uri` was in the request: then the token request must repeat it (RFC 6749 §4.1.3). */
  redirectUriSent: boolean;
  /** The scope asked for (already a subset of the client's). */
  scope: string;
  /** The client's `state`, returned untouched; null when it sent none. */
  state: string | null;
  /** RFC 7636 §4.2 `code_challenge`, method S256. */
  codeChallenge: string;
  /**
   * RFC 9449 §10 `dpop_jkt`: the thumbprint of the DPoP key the code is bound to (its exchange
   * needs a proof by that key), or null for a code any proof, or none, may redeem.
   */
  dpopJkt: string | null;
  createdAt: number;
  /** When the login challenge stops being answerable. */
  expiresAt: number;
  status: AuthorizationStatus;
  /** When the login app answered, or null. */
  decidedAt: number | null;
  /** Digest of the `login_verifier` that brings the browser back after the answer, or null. */
  verifierDigest: string | null;
  /** Accepted: the user, as the login app names them. */
  subject: string | null;
  username: string | null;
  /** Accepted: the scope granted (never wider than `scope`). */
  grantedScope: string | null;
  /** Rejected: the RFC 6749 §4.1.2.1 error and its description. */
  error: string | null;
  errorDescription: string | null;
  /** The code, once issued: its digest, expiry, and the grant its tokens will form. */
  codeDigest: string | null;
  codeExpiresAt: number | null;
  grantId: string | null;
  /** When the code was exchanged for tokens, or null. */
  redeemedAt: number | null;
}

/** Which secret of the flow an authorization is looked up by. */
export type AuthorizationKey = { challengeDigest: string } | { verifierDigest: string } | { codeDigest: string };

/** The login app's answer to a pending authorization request. */
export type LoginDecision =
  | { status: 'accepted'; verifierDigest: string; subject: string; username: string; grantedScope: string }
  | { status: 'rejected'; verifierDigest: string; error: string; errorDescription: string | null };

/** A code issued for an accepted authorization request (RFC 6749 §4.1.2). */
export interface IssuedCode {
  codeDigest: string;
  expiresAt: number;
  grantId: string;
}

/** Outcome of {@link AuthorizationStore.redeemAuthorizationCode}. */
export type RedeemOutcome =
  /** The code was current: it is now redeemed and the tokens are stored. */
  | 'redeemed'
  /** The code was redeemed before: nothing was written (the caller revokes its grant). */
  | 'used'
  /** No such code, or it expired: nothing was written. */
  | 'invalid';
