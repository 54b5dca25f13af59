import type { FastifyInstance } from 'fastify';
import { replyAnswer, type Answer } from '../answer.js';
import { AUTHORIZE_PATH, INTROSPECTION_PATH, METADATA_PATH, REVOCATION_PATH, TOKEN_PATH } from '../paths.js';
import type { RouteDeps } from '../types.js';

/**
 * RFC 8414 §2 metadata for an issuer: the endpoints, resolved against the issuer URL, the grant
 * types of the token endpoint, and the client authentication methods each accepts (contract 3).
 * With a login (`login`: `--login-url` or the development login), the authorization endpoint
 * and what it takes (contract 5); without one, neither it nor the code grant is offered. The
 * DPoP proof algorithms, when given (RFC 9449 §5.1).
 */
export function authorizationServerMetadata(issuer: string, grantTypes: readonly string[], login: boolean, dpopAlgorithms: readonly string[] = []): Record<string, unknown> {
  const base = issuer.replace(/\/+$/, '');
  return {
    issuer,
    ...(login && { authorization_endpoint: base + AUTHORIZE_PATH }),
    token_endpoint: base + TOKEN_PATH,
    revocation_endpoint: base + REVOCATION_PATH,
    introspection_endpoint: base + INTROSPECTION_PATH,
    grant_types_supported: login ? grantTypes : grantTypes.filter((g) => g !== 'authorization_code'),
    response_types_supported: login ? ['code'] : [],
    ...(login && { response_modes_supported: ['query'], code_challenge_methods_supported: ['S256'], authorization_response_iss_parameter_supported: true }),
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    revocation_endpoint_auth_methods_supported: ['client_secret_post', 'client_secret_basic', 'none'],
    introspection_endpoint_auth_methods_supported: ['client_secret_post', 'client_secret_basic', 'none'],
    // RFC 9449 §5.1: the token endpoint takes DPoP proofs signed with these.
    ...(dpopAlgorithms.length > 0 && { dpop_signing_alg_values_supported: [...dpopAlgorithms] }),
  };
}

/** GET /.well-known/oauth-authorization-server (RFC 8414 §3). */
export function metadataRoute(app: FastifyInstance, { engine }: RouteDeps): void {
  let cached: { issuer: string; answer: Answer } | undefined;
  app.route({
    method: ['GET', 'HEAD'],
    url: METADATA_PATH,
    handler: async (_request, reply) => {
      // The issuer is read per request: `serve --port 0` learns its URL only once listening.
      const issuer = engine.config.issuer;
      if (cached?.issuer !== issuer) {
        const payload = JSON.stringify(authorizationServerMetadata(issuer, engine.grantTypes(), engine.authorization.available, engine.dpopAlgorithms()));
        // Cacheable (RFC 8414 §3), unlike every other answer.
        cached = { issuer, answer: { status: 200, headers: { 'cache-control': 'max-age=300' }, payload, noStore: false, errorCode: null, reason: null } };
      }
      return replyAnswer(reply, cached.answer);
    },
  });
}
