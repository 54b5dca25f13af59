import type { ResourceServerClock } from './clock.js';
import type { DpopOptions } from './dpop-guard.js';

export interface ResourceServerOptions {
  /** tokenctl's base URL, e.g. `https://127.0.0.1:8443`. */
  url: string;
  /** The resource server's client: it introspects (RFC 7662) and polls events as this client. */
  clientId: string;
  clientSecret: string;
  /** A CA (PEM) to trust besides the system's: serve's development certificate. */
  ca?: string | Buffer;
  /**
   * How revocations reach the cache: `poll` (the default: RFC 8936 long polling, the client must be
   * registered with `tokenctl receiver add ID --poll --client CLIENT_ID`), `push` (RFC 8935: mount
   * {@link ResourceServer.pushHandler}), or `false` (none: every answer is kept at most
   * `fallbackMaxAgeMs`).
   */
  events?: 'poll' | 'push' | false;
  /**
   * The `aud` of the receiver's SETs (`tokenctl receiver add` prints it; by default the receiver's
   * id): a SET for another receiver is refused. Required with `events: 'push'`, where anyone can
   * post a SET tokenctl signed for someone else. By default also the `aud` every access token must
   * carry (see `accept`).
   */
  audience?: string;
  /**
   * Which active access tokens this API accepts (RFC 7662 §4, RFC 9068 §4: a resource server
   * checks that a token was meant for it). `audience`: the `aud` a token must carry (one of these);
   * default the `audience` above when it is given, `false` for any. `clientIds`: the clients whose
   * tokens are accepted; default any. A token that fails either is refused as not active (401).
   */
  accept?: { audience?: string | readonly string[] | false; clientIds?: readonly string[] };
  /** The `iss` of the SETs; read from the server's RFC 8414 metadata when not given. */
  issuer?: string;
  /** Default `<url>/.well-known/jwks.json`. */
  jwksUrl?: string;
  cache?: {
    /** Default 10000. */
    maxEntries?: number;
    /** An active answer is kept at most this long, and never past the token's `exp`. Default 5 minutes. */
    maxAgeMs?: number;
    /** An inactive answer is kept this long. Default 10 seconds. */
    inactiveTtlMs?: number;
  };
  /**
   * While the event stream is down (not yet up, a poll failed, a SET failed verification), a
   * cached answer is served only when it is younger than this, and new answers are kept no
   * longer. Default 2000 ms.
   */
  fallbackMaxAgeMs?: number;
  /** Default 5000 ms; a server that does not answer in time is a 503, never an accepted token. */
  introspectionTimeoutMs?: number;
  /** The realm of the `WWW-Authenticate` challenges. */
  realm?: string;
  /** push: the `Authorization` value tokenctl sends with each SET (the receiver's `--authorization-…`). */
  pushAuthorization?: string;
  /** push: the largest body accepted (413 past it, the rest never read). Default 1 MiB. */
  maxPushBytes?: number;
  /**
   * Accept DPoP-bound tokens (RFC 9449 §7): `Authorization: DPoP <token>` with its proof, checked
   * against the API's URL. Without it only `Bearer` is accepted. Either way a bound token
   * presented as `Bearer` is refused (§7.2): without its key it gets nothing.
   */
  dpop?: DpopOptions;
  /** Errors of the event stream and of introspection (never with a token or secret in them). Default: none. */
  onError?: (error: Error) => void;
  /**
   * The time the cache's ages and the fallback are measured in, and what the poller's waits
   * (its back-off, its pause after a refused SET) sleep on. Default: the system's (`Date.now`,
   * `setTimeout`); a test gives its own to move time on instead of waiting.
   */
  clock?: ResourceServerClock;
}

export interface ResourceServerStats {
  /** Requests answered from the cache. */
  hits: number;
  /** Requests that asked the server (or joined a request already asking for the same token). */
  misses: number;
  /** Introspection requests sent. */
  introspections: number;
  /** Verified SETs applied (tokens-revoked SETs: one may carry several revocations). */
  events: number;
  /** Revocations applied: those of every SET counted in `events`. */
  revocations: number;
  /** Cached answers dropped by events. */
  dropped: number;
  /** SETs received again (same `jti`) and not applied a second time. */
  replays: number;
  /** Active access tokens refused because they were meant for another audience or client (`accept`). */
  foreign: number;
  /** Requests refused for DPoP: a proof refused or used again, a bound token as `Bearer` or without its key's proof. */
  dpopRefused: number;
  entries: number;
  streamUp: boolean;
}
