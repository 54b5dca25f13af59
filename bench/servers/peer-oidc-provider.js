/**
 * The peer: panva's node-oidc-provider 9 with its in-memory adapter, introspection and
 * revocation enabled, one confidential client (client_secret_post; client_secret_basic is
 * registered as a second client), and access tokens minted in-process through the provider's
 * own models before it starts listening.
 *
 * Usage: node bench/servers/peer-oidc-provider.js <introspect-count> <revoke-count> <out-dir>
 * Writes <out-dir>/peer-introspect.txt and <out-dir>/peer-revoke.txt (one token a line), then
 * prints `listening on http://127.0.0.1:PORT`. Endpoints: /token/introspection, /token/revocation.
 *
 * The adapter is the library's own MemoryAdapter over an unbounded Map: its default storage is
 * an LRU of 1,000 entries, which would evict all but the last few hundred pre-minted tokens.
 */
import { createServer } from 'node:http';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
// @ts-expect-error: oidc-provider ships no type declarations
import Provider from 'oidc-provider';
// @ts-expect-error: the library's own in-memory adapter, imported by path
import MemoryAdapter from 'oidc-provider/lib/adapters/memory_adapter.js';

const HOST = '127.0.0.1';
export const PEER_CLIENT = { id: 'bench', secret: 'bench-secret-0123456789abcdef' };
const [introspectCount, revokeCount, outDir] = [Number(process.argv[2] ?? 1000), Number(process.argv[3] ?? 0), process.argv[4] ?? '.'];

/** The get/set/delete surface MemoryAdapter expects of its storage, without the size cap. */
class UnboundedStore {
  /** @type {Map<string, { value: unknown, expiry?: number }>} */
  #map = new Map();
  /** @param {string} key */
  get(key) {
    const e = this.#map.get(key);
    if (!e) return undefined;
    if (e.expiry !== undefined && e.expiry <= Date.now()) {
      this.#map.delete(key);
      return undefined;
    }
    return e.value;
  }
  /** @param {string} key @param {unknown} value @param {{ maxAge?: number }} [opts] */
  set(key, value, opts) {
    this.#map.set(key, { value, expiry: opts?.maxAge === undefined ? undefined : Date.now() + opts.maxAge });
  }
  /** @param {string} key */
  delete(key) {
    return this.#map.delete(key);
  }
}
const storage = new UnboundedStore();

const provider = new Provider(`http://${HOST}`, {
  adapter: (/** @type {string} */ model) => new MemoryAdapter(model, storage),
  clients: [
    { client_id: PEER_CLIENT.id, client_secret: PEER_CLIENT.secret, token_endpoint_auth_method: 'client_secret_post', redirect_uris: ['https://rp.example.test/cb'], grant_types: ['authorization_code', 'refresh_token'] },
    { client_id: 'bench-basic', client_secret: PEER_CLIENT.secret, token_endpoint_auth_method: 'client_secret_basic', redirect_uris: ['https://rp.example.test/cb'], grant_types: ['authorization_code', 'refresh_token'] },
  ],
  features: {
    devInteractions: { enabled: false },
    introspection: { enabled: true, allowedPolicy: async () => true },
    revocation: { enabled: true, allowedPolicy: async (/** @type {unknown} */ _ctx, /** @type {any} */ client, /** @type {any} */ token) => token.clientId === client.clientId },
  },
  ttl: { AccessToken: 3600, Grant: 30 * 86400 },
});
provider.on('server_error', (/** @type {unknown} */ _ctx, /** @type {Error} */ err) => process.stderr.write(`peer server_error: ${err.stack}\n`));

const client = await provider.Client.find(PEER_CLIENT.id);

/** One grant and one access token for it, as an authorization code exchange would leave them. */
async function mintOne(/** @type {number} */ i) {
  const accountId = `user-${i % 1000}`;
  const grant = new provider.Grant({ accountId, clientId: PEER_CLIENT.id });
  grant.addOIDCScope('openid');
  const grantId = await grant.save();
  const at = new provider.AccessToken({ accountId, client, grantId, gty: 'authorization_code', scope: 'openid' });
  return at.save();
}

/** @param {number} count @param {string} file */
async function mintTo(count, file) {
  const out = new Array(count);
  for (let i = 0; i < count; i++) out[i] = await mintOne(i);
  writeFileSync(file, out.join('\n') + '\n');
}

const started = Date.now();
await mintTo(introspectCount, join(outDir, 'peer-introspect.txt'));
await mintTo(revokeCount, join(outDir, 'peer-revoke.txt'));
process.stderr.write(`peer: minted ${introspectCount + revokeCount} tokens in ${Date.now() - started} ms\n`);

const server = createServer(provider.callback());
server.listen(0, HOST, () => {
  const addr = /** @type {import('node:net').AddressInfo} */ (server.address());
  process.stdout.write(`listening on http://${HOST}:${addr.port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
