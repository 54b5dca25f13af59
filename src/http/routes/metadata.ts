import type { FastifyInstance } from 'fastify';
import { replyAnswer, type Answer } from '../answer.js';
import { INTROSPECTION_PATH, METADATA_PATH, REVOCATION_PATH, TOKEN_PATH } from '../paths.js';
import type { RouteDeps } from '../types.js';

/**
 * RFC 8414 §2 metadata for an issuer: the three endpoints, resolved against the issuer URL, the
 * grant types of the token endpoint, and the client authentication methods each accepts (contract 3).
 */
export function authorizationServerMetadata(issuer: string, grantTypes: readonly string[]): Record<string, unknown> {
  const base = issuer.replace(/\/+$/, '');
  return {
    issuer,
    token_endpoint: base + TOKEN_PATH,
    revocation_endpoint: base + REVOCATION_PATH,
    introspection_endpoint: base + INTROSPECTION_PATH,
    grant_types_supported: grantTypes,
    // No authorization endpoint here: issuance is "not shown" in the spec (part 1).
    response_types_supported: [],
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    revocation_endpoint_auth_methods_supported: ['client_secret_post', 'client_secret_basic', 'none'],
    introspection_endpoint_auth_methods_supported: ['client_secret_post', 'client_secret_basic', 'none'],
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
        const payload = JSON.stringify(authorizationServerMetadata(issuer, engine.grantTypes()));
        // Cacheable (RFC 8414 §3), unlike every other answer.
        cached = { issuer, answer: { status: 200, headers: { 'cache-control': 'max-age=300' }, payload, noStore: false, errorCode: null, reason: null } };
      }
      return replyAnswer(reply, cached.answer);
    },
  });
}
