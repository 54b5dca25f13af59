/**
 * The three servers under test, each started as its own process on 127.0.0.1, port 0, pinned
 * to the server core, and what a request to each looks like. Every request of every contender
 * carries the same form body, `token=…&token_type_hint=access_token&client_id=…&client_secret=…`
 * (spec 4.2/4.3 and part 5; RFC 6749 client_secret_post), so the bytes on the wire compare.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runToEnd, startServer } from './proc.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const CLIENT = { id: 'bench', secret: 'bench-secret-0123456789abcdef' };
/** The authorization code client of the pool store (setup-store.js CODE_CLIENT). */
export const CODE_CLIENT = { id: 'bench-code', secret: CLIENT.secret, redirectUri: 'http://127.0.0.1:9/callback' };
/** Spec part 5 scenario I: Basic base64(client_id ":" base64(password)). */
const basic = (/** @type {{ id: string, secret: string }} */ c) => 'Basic ' + Buffer.from(`${c.id}:${Buffer.from(c.secret).toString('base64')}`).toString('base64');
// token_type_hint is required by spec 4.2/4.3; the peer takes it as the RFC 7009/7662 hint.
const CREDS = `&token_type_hint=access_token&client_id=${CLIENT.id}&client_secret=${CLIENT.secret}`;

/** Body and path of a token request, per contender and operation. */
export const REQUESTS = {
  ceiling: { introspect: { path: '/oauth/introspection', prefix: 'token=', suffix: CREDS } },
  peer: {
    introspect: { path: '/token/introspection', prefix: 'token=', suffix: CREDS },
    revoke: { path: '/token/revocation', prefix: 'token=', suffix: CREDS },
  },
  tokenctl: {
    introspect: { path: '/oauth/introspection', prefix: 'token=', suffix: CREDS },
    revoke: { path: '/oauth/revocation', prefix: 'token=', suffix: CREDS },
    refresh: {
      path: '/oauth/token',
      prefix: 'grant_type=refresh_token&refresh_token=',
      suffix: '',
      headers: { authorization: basic(CLIENT) },
    },
    // The same refresh with a DPoP proof of its own on every request (RFC 9449; load-worker.js).
    refreshDpop: {
      path: '/oauth/token',
      prefix: 'grant_type=refresh_token&refresh_token=',
      suffix: '',
      headers: { authorization: basic(CLIENT) },
      dpop: true,
    },
    // The code file's lines are `code=…&code_verifier=…`; the redirect URI is repeated because
    // the authorization request sent it (RFC 6749 §4.1.3). Authenticated as refresh is.
    authorizationCode: {
      path: '/oauth/token',
      prefix: 'grant_type=authorization_code&',
      suffix: `&redirect_uri=${encodeURIComponent(CODE_CLIENT.redirectUri)}`,
      headers: { authorization: basic(CODE_CLIENT) },
    },
  },
};

/** @param {string} workDir @param {string} name */
export function startCeiling(workDir, name) {
  return startServer('ceiling', process.execPath, [join(ROOT, 'bench/servers/ceiling.js')], { log: join(workDir, `${name}.log`) });
}

/**
 * Starts the peer with `introspect` + `revoke` freshly minted tokens; their files are in workDir.
 * @param {string} workDir @param {string} name @param {number} revoke
 */
export async function startPeer(workDir, name, revoke) {
  const server = await startServer('peer (oidc-provider)', process.execPath, [join(ROOT, 'bench/servers/peer-oidc-provider.js'), '1000', String(revoke), workDir], {
    log: join(workDir, `${name}.log`),
  });
  return { ...server, introspectFile: join(workDir, 'peer-introspect.txt'), revokeFile: join(workDir, 'peer-revoke.txt') };
}

/** Flags of `tokenctl serve` that this tokenctl knows (it prints them in --help). */
let serveFlags = '';

/**
 * Whether `tokenctl serve` exists in the built code: dist/http/server.js and a working
 * `serve --help`. Returns null when ready, else why not.
 */
export async function tokenctlServeMissing() {
  if (!existsSync(join(ROOT, 'dist/http/server.js'))) return 'dist/http/server.js is missing (the HTTP server is not built yet)';
  const r = await runToEnd(process.execPath, [join(ROOT, 'bin/run.js'), 'serve', '--help'], { timeoutMs: 60_000 });
  if (r.code !== 0) return `\`tokenctl serve --help\` failed (exit ${r.code}): ${(r.stderr || r.stdout).trim().split('\n')[0]}`;
  serveFlags = r.stdout;
  return null;
}

/** Whether this tokenctl's `serve` has a flag (after {@link tokenctlServeMissing}). @param {string} flag */
export function serveKnows(flag) {
  return serveFlags.includes(flag);
}

/**
 * `tokenctl serve` on a store (a SQLite file or a postgres:// URL): plain HTTP on loopback,
 * port 0, default durability and pool size. `opt.node` names the node (`--node`, for several
 * nodes on one PostgreSQL store); `opt.core` pins it elsewhere than the server core (null: not pinned).
 * @param {string} workDir @param {string} name @param {string} db @param {string[]} [nodeArgs] e.g. --cpu-prof
 * `opt.serveArgs` are more flags of serve (e.g. --metrics-port 0).
 * @param {{ node?: string, core?: string|null, serveArgs?: string[] }} [opt]
 */
export function startTokenctl(workDir, name, db, nodeArgs = [], opt = {}) {
  const args = [...nodeArgs, join(ROOT, 'bin/run.js'), 'serve', '--host', '127.0.0.1', '--port', '0', '--db', db, ...(opt.serveArgs ?? [])];
  if (serveFlags.includes('--log-level')) args.push('--log-level', 'warn');
  if (opt.node !== undefined) args.push('--node', opt.node);
  return startServer('tokenctl serve', process.execPath, args, { log: join(workDir, `${name}.log`), env: { ...process.env, NODE_ENV: 'production' }, core: opt.core });
}
