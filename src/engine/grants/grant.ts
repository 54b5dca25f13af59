import type { ClientRecord, TokenRecord } from '../../store/store.js';
import type { EngineContext } from '../context.js';
import type { TokenBinding } from '../dpop/index.js';
import { InvalidRequestError, UnsupportedGrantTypeError } from '../errors.js';
import type { Parameters } from '../parameters.js';
import type { ClientOutcome, TokenEndpointResponse } from '../results.js';

/**
 * One grant type of the token endpoint (RFC 6749 §4, §6; an extension grant's URI, §4.5): a row
 * of the engine's grant table (`grants/index.ts`), as node-oidc-provider's `grantTypeHandlers`
 * and fosite's `TokenEndpointHandler` are. A new grant is a file of this folder and its row.
 */
export interface Grant {
  /** The `grant_type` value that selects it. */
  readonly type: string;
  /**
   * Reads and checks the grant's own parameters, before the client is authenticated, so that a
   * malformed request is refused as such (400 `invalid_request`) whoever sent it.
   */
  parse(params: Parameters): ParsedGrant;
}

/** A token request of one grant, its parameters read: what the engine exchanges once the client is authenticated. */
export interface ParsedGrant<R extends TokenEndpointResponse = TokenEndpointResponse> {
  readonly type: string;
  /**
   * The token the request presents (the refresh token of RFC 6749 §6), which the client's
   * authentication reads with the client in one store read; null when it presents none.
   */
  readonly presented: string | null;
  /**
   * The exchange for the authenticated `client`: `found` is the presented token's record (null:
   * none, or not known), `presentedAt` when the request was taken up, before anything was read,
   * `binding` what the tokens it mints are bound to (RFC 9449 §5: the key of the request's DPoP
   * proof, checked already; {@link BEARER} without one). Throws the engine's errors for a refusal.
   */
  exchange(ctx: EngineContext, client: ClientRecord, found: TokenRecord | null, presentedAt: number, binding: TokenBinding): Promise<ClientOutcome<R>>;
}

/** The grants the token endpoint serves, by `grant_type`. */
export type GrantTable = ReadonlyMap<string, Grant>;

/** A table of `grants`, each under its own `grant_type`. */
export function grantTable(...grants: Grant[]): GrantTable {
  return new Map(grants.map((g) => [g.type, g]));
}

/**
 * RFC 6749 §4, §5.2: the grant a token request asks for, with its parameters read. A missing
 * `grant_type` is `invalid_request`; one the table does not hold, `unsupported_grant_type`.
 */
export function parseTokenRequest(grants: GrantTable, params: Parameters): ParsedGrant {
  const type = params.grant_type;
  if (type === undefined || type === '') throw new InvalidRequestError('The parameter grant_type is missing', 'grant_type');
  const grant = grants.get(type);
  if (grant === undefined) throw new UnsupportedGrantTypeError(type, [...grants.keys()]);
  return grant.parse(params);
}

/**
 * Whether `client` may use the grant `type` (RFC 6749 §5.2: otherwise `unauthorized_client`,
 * which the engine throws as UnauthorizedClientError): one of the grant types it was registered with.
 */
export function clientMayUse(client: ClientRecord, type: string): boolean {
  return client.grantTypes.includes(type);
}
