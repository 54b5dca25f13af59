#!/usr/bin/env node
/**
 * The token check NGINX asks (`auth_request /_auth`) for every API request: tokenctl/resource-server
 * on a loopback port. It introspects each new token once, keeps the answer (10 minutes here, never
 * past the token's exp) and drops it the moment tokenctl's events say it was revoked: NGINX itself
 * caches nothing, so there is nothing in NGINX to purge.
 *
 * Environment: TOKENCTL_URL (https://127.0.0.1:8443), RS_CLIENT_ID, RS_CLIENT_SECRET_FILE (a file
 * holding the secret), TOKENCTL_CA (the development certificate, optional), SIDECAR_PORT (9100),
 * RS_AUDIENCE (optional: the receiver's audience, and the aud the tokens it accepts must carry),
 * RS_DPOP_ORIGIN (optional: the API's origin as clients call it through NGINX, e.g.
 * https://api.example.com; accepts DPoP-bound tokens with their proofs, checked against the
 * X-Original-Method and X-Original-URI that nginx.conf.template sets on the subrequest).
 * Answers 204 with X-User, X-Client-Id and X-Scope for an active token; 401/400/403 with the
 * RFC 6750 challenge NGINX passes on; 503 when tokenctl cannot be asked (NGINX answers 500).
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { resourceServer, writeRefusal } from 'tokenctl/resource-server';

function originalRequest(req) {
  const method = req.headers['x-original-method'];
  const uri = req.headers['x-original-uri'];
  if (typeof method !== 'string' || typeof uri !== 'string' || !uri.startsWith('/')) return undefined;
  return { method, url: new URL(process.env.RS_DPOP_ORIGIN).origin + uri };
}
const env = (name, fallback) => process.env[name] ?? fallback ?? (() => { throw new Error(`${name} is not set`); })();
const rs = resourceServer({
  url: env('TOKENCTL_URL', 'https://127.0.0.1:8443'),
  clientId: env('RS_CLIENT_ID'),
  clientSecret: readFileSync(env('RS_CLIENT_SECRET_FILE'), 'utf8').trim(),
  ca: process.env.TOKENCTL_CA ? readFileSync(process.env.TOKENCTL_CA) : undefined,
  audience: process.env.RS_AUDIENCE,
  // The subrequest is GET /check: a proof's htm and htu are checked against what NGINX says the
  // client sent, the origin configured, never the client's Host header.
  dpop: process.env.RS_DPOP_ORIGIN ? { request: originalRequest } : undefined,
  cache: { maxAgeMs: 10 * 60_000 },
  realm: 'api',
  onError: (error) => console.error(`auth-sidecar: ${error.message}`),
});

const server = createServer(async (req, res) => {
  const scopes = (req.headers['x-required-scope'] ?? '').split(' ').filter(Boolean);
  const result = await rs.check(req, scopes);
  if (!result.ok) return writeRefusal(res, result.refusal);
  const p = result.principal;
  res.writeHead(204, { 'x-user': p.username ?? '', 'x-client-id': p.clientId ?? '', 'x-scope': p.scopes.join(' ') });
  res.end();
});
server.listen(Number(env('SIDECAR_PORT', '9100')), '127.0.0.1', () => process.stdout.write(`auth-sidecar listening on 127.0.0.1:${server.address().port}\n`));
rs.ready().then(() => process.stdout.write('auth-sidecar: event stream up\n'));
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => server.close(() => rs.close().then(() => process.exit(0))));
