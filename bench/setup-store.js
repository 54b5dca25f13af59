/**
 * Builds a tokenctl SQLite store for the benchmark through the built code (dist/): the client
 * through the Engine (a real scrypt-hashed secret), the tokens through the store's own
 * `insertTokens`, in big batches, with the engine's own token and digest functions. Every token
 * is active for 30 days (access) or 60 days (refresh), so that a cached store stays usable, and
 * each is in its own grant.
 *
 * Usage:
 *   node bench/setup-store.js --db FILE --schema   (prints the schema fingerprint, see below)
 *   node bench/setup-store.js --db FILE [--access N] [--refresh N] [--out PREFIX] [--sample K]
 *                             [--bulk-client ID --bulk N] [--codes N]
 * Writes PREFIX-access.txt (every access token of the bench client, or a uniform sample of K of
 * them with --sample) and PREFIX-refresh.txt, and prints one JSON line with what it did.
 * With --codes, the client CODE_CLIENT and N authorization requests already accepted with their
 * code issued, as the browser leg would leave them, and PREFIX-codes.txt: one
 * `code=…&code_verifier=…` per line, the part of a token request that differs per code.
 */
import { writeFileSync, existsSync, rmSync } from 'node:fs';
import { randomBytes, randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';

export const BENCH_CLIENT = { id: 'bench', secret: 'bench-secret-0123456789abcdef' };
/**
 * The authorization code client: confidential with the bench client's secret, so that a code
 * exchange authenticates exactly as the refresh figure's requests do and their ratio is the two
 * grants' own work. Its one redirect URI is a loopback one that nothing listens on: the bench
 * reads the code from the redirect and never follows it.
 */
export const CODE_CLIENT = { id: 'bench-code', secret: BENCH_CLIENT.secret, redirectUri: 'http://127.0.0.1:9/callback' };
const DIST = new URL('../dist/', import.meta.url);
const BATCH = 20_000;
/** From this many tokens on, bulk loading bypasses the store API (see rawLoader). */
const RAW_FROM = 50_000;
const DAY_MS = 86_400_000;

/** @param {string} rel */
async function dist(rel) {
  const file = new URL(rel, DIST);
  if (!existsSync(fileURLToPath(file))) throw new Error(`${fileURLToPath(file)} is missing: run \`npm run build\` first`);
  return import(file.href);
}

/**
 * @param {{ db: string, access: number, refresh: number, out?: string, sample?: number,
 *   bulkClient?: string, bulk: number, codes?: number }} o
 */
export async function setupStore(o) {
  const started = Date.now();
  const { SqliteStore } = await dist('store/sqlite/index.js');
  const { Engine } = await dist('engine/engine.js');
  const { digestToken, newJti } = await dist('engine/tokens.js');
  for (const suffix of ['', '-wal', '-shm']) rmSync(o.db + suffix, { force: true });

  const store = await SqliteStore.open(o.db);
  let closed = false;
  let indexMs = 0;
  const engine = new Engine({ store, issuer: 'https://localhost', node: 'bench' });
  try {
    await engine.createClient({ name: 'bench', id: BENCH_CLIENT.id, secret: BENCH_CLIENT.secret, orgId: 'org-bench', audience: 'https://api.example.test' }, 'bench');
    if (o.bulkClient) await engine.createClient({ name: 'bulk', id: o.bulkClient, public: true }, 'bench');
    if (o.codes) {
      await engine.createClient({
        name: 'bench-code', id: CODE_CLIENT.id, secret: CODE_CLIENT.secret, orgId: 'org-bench', audience: 'https://api.example.test',
        redirectUris: [CODE_CLIENT.redirectUri], grantTypes: ['authorization_code', 'refresh_token'],
      }, 'bench');
    }

    const now = Date.now();
    /** @param {'access_token'|'refresh_token'} type @param {string} clientId @param {string} token */
    const record = (type, clientId, token, /** @type {number} */ j) => {
      const user = `user-${j % 1000}`;
      return {
        jti: newJti(), digest: digestToken(token), type, grantId: randomUUID(), clientId,
        username: user, sub: user, scope: 'read write', audience: 'https://api.example.test', orgId: 'org-bench',
        node: 'bench', issuedAt: now, notBefore: now, expiresAt: now + (type === 'access_token' ? 30 : 60) * DAY_MS,
        revokedAt: null, replacedAt: null, replacedBy: null, jkt: null,
      };
    };
    /** @type {Array<[string, string, number, number]>} */
    const plan = [['access_token', BENCH_CLIENT.id, o.access, o.sample ?? -1], ['refresh_token', BENCH_CLIENT.id, o.refresh, -1]];
    if (o.bulkClient && o.bulk > 0) plan.push(['access_token', o.bulkClient, o.bulk, 0]);
    const total = plan.reduce((n, p) => n + p[2], 0);
    /** @type {string[][]} */
    const kept = [];
    if (total < RAW_FROM) {
      for (const [type, clientId, count, keep] of plan) kept.push(await insertVia((b) => store.insertTokens(b), type, clientId, count, keep, record));
    } else {
      await store.close();
      closed = true;
      const raw = await rawLoader(o.db);
      try {
        for (const [type, clientId, count, keep] of plan) kept.push(await insertVia(raw.insert, type, clientId, count, keep, record));
      } finally {
        indexMs = raw.finish();
      }
    }
    const [access = [], refresh = []] = kept;
    await verify(SqliteStore, o.db, [access[0], refresh[0], access.at(-1)], digestToken);
    const codes = o.codes ? await insertCodes(SqliteStore, o.db, o.codes) : [];
    if (o.out) {
      writeFileSync(`${o.out}-access.txt`, access.join('\n') + '\n');
      writeFileSync(`${o.out}-refresh.txt`, refresh.join('\n') + '\n');
      if (o.codes) writeFileSync(`${o.out}-codes.txt`, codes.join('\n') + '\n');
    }
    return { db: o.db, access: o.access, refresh: o.refresh, bulk: o.bulk, codes: codes.length, kept: access.length, index_ms: indexMs, ms: Date.now() - started };
  } finally {
    if (!closed) await store.close();
  }
}

/**
 * Writes `count` authorization requests of CODE_CLIENT through the store's own
 * `createAuthorization`, each already `accepted` with its code issued, and returns the token
 * request tails (`code=…&code_verifier=…`). The writes are started a batch at a time so that
 * the store's group commit folds each batch into one transaction. The codes live 30 days, not
 * the 60 s of contract 5: they are bench data in a cached template store, used once each on a
 * fresh copy, and must outlive the cache (a week).
 * @param {any} SqliteStore @param {string} file @param {number} count
 */
async function insertCodes(SqliteStore, file, count) {
  const { sha256, newJti } = await dist('engine/tokens.js');
  const { s256 } = await dist('engine/authorization/pkce.js');
  const { CODE_PREFIX, LOGIN_CHALLENGE_TTL_MS } = await dist('engine/authorization/flow.js');
  const store = await SqliteStore.open(file, { create: false });
  /** @type {string[]} */
  const tails = [];
  const now = Date.now();
  try {
    for (let i = 0; i < count; i += 2_000) {
      const writes = [];
      for (let j = i; j < Math.min(count, i + 2_000); j++) {
        const code = CODE_PREFIX + randomBytes(32).toString('base64url');
        // RFC 7636 §4.1: 43 unreserved characters, what a client's 32 random bytes make.
        const verifier = randomBytes(32).toString('base64url');
        const user = `user-${j % 1000}`;
        writes.push(store.createAuthorization({
          id: newJti(now), challengeDigest: sha256(randomBytes(32).toString('base64url')), browserDigest: sha256(randomBytes(32).toString('base64url')),
          clientId: CODE_CLIENT.id, redirectUri: CODE_CLIENT.redirectUri, redirectUriSent: true, scope: 'read write', state: null,
          codeChallenge: s256(verifier), createdAt: now, expiresAt: now + LOGIN_CHALLENGE_TTL_MS, status: 'accepted', decidedAt: now,
          verifierDigest: sha256(randomBytes(32).toString('base64url')), subject: user, username: user, grantedScope: 'read write',
          error: null, errorDescription: null, codeDigest: sha256(code), codeExpiresAt: now + 30 * DAY_MS, grantId: randomUUID(), redeemedAt: null, dpopJkt: null,
        }));
        tails.push(`code=${code}&code_verifier=${verifier}`);
      }
      await Promise.all(writes);
    }
    const first = tails[0]?.slice(5, tails[0].indexOf('&'));
    if (first !== undefined && (await store.findAuthorization({ codeDigest: sha256(first) }))?.status !== 'accepted') throw new Error(`${file}: a code just written is not found`);
  } finally {
    await store.close();
  }
  return tails;
}

/**
 * Reopens the finished file through the store and finds a few of the tokens by digest.
 * @param {any} SqliteStore @param {string} file @param {(string|undefined)[]} tokens @param {(t: string) => string} digest
 */
async function verify(SqliteStore, file, tokens, digest) {
  const store = await SqliteStore.open(file, { create: false });
  try {
    for (const t of tokens) {
      if (t !== undefined && !(await store.findTokenByDigest(digest(t)))) throw new Error(`${file}: a token just inserted is not found`);
    }
  } finally {
    await store.close();
  }
}

/**
 * Inserts `count` tokens of one type for one client in batches; returns the token strings kept
 * (all of them for keep < 0, none for 0, else an evenly spread sample of `keep`).
 * @param {(batch: object[]) => unknown} insert @param {string} type @param {string} clientId
 * @param {number} count @param {number} keep @param {Function} record
 */
async function insertVia(insert, type, clientId, count, keep, record) {
  const { TOKEN_PREFIX } = await dist('engine/tokens.js');
  const prefix = TOKEN_PREFIX[type];
  /** @type {string[]} */
  const kept = [];
  const limit = keep < 0 ? count : keep;
  const every = keep > 0 && keep < count ? count / keep : 1;
  let nextKept = 0;
  for (let i = 0; i < count; i += BATCH) {
    const batch = [];
    const n = Math.min(count, i + BATCH) - i;
    // The engine's format (prefix + 32 CSPRNG bytes in base64url), with one getrandom per batch.
    const random = randomBytes(32 * n);
    for (let j = i; j < i + n; j++) {
      const token = prefix + random.subarray(32 * (j - i), 32 * (j - i + 1)).toString('base64url');
      if (kept.length < limit && j >= nextKept) {
        kept.push(token);
        nextKept += every;
      }
      batch.push(record(type, clientId, token, j));
    }
    await insert(batch);
  }
  return kept;
}

/**
 * The fast path for big stores, on a file the store itself created: one exclusive connection
 * without journal or fsync (a half-built benchmark store is simply rebuilt), the secondary
 * indexes dropped and rebuilt afterwards. Columns come from the live schema (each column is the
 * snake_case of a TokenRecord field), so nothing of the schema is copied here. The file goes
 * back to WAL at the end, as the store leaves it.
 * @param {string} file
 */
async function rawLoader(file) {
  const { default: Database } = await import('better-sqlite3');
  const db = new Database(file);
  db.pragma('journal_mode = DELETE');
  db.pragma('journal_mode = OFF');
  db.pragma('synchronous = OFF');
  db.pragma('locking_mode = EXCLUSIVE');
  db.pragma('cache_size = -524288');
  const columns = /** @type {{ name: string }[]} */ (db.pragma('table_info(tokens)')).map((c) => c.name);
  const fields = columns.map((c) => c.replace(/_([a-z])/g, (_, x) => x.toUpperCase()));
  const stmt = db.prepare(`INSERT INTO tokens (${columns.join(', ')}) VALUES (${fields.map((f) => '@' + f).join(', ')})`);
  const indexes = /** @type {{ name: string, sql: string }[]} */ (
    db.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'tokens' AND sql IS NOT NULL").all()
  );
  for (const ix of indexes) db.exec(`DROP INDEX "${ix.name}"`);
  const insertMany = db.transaction((/** @type {object[]} */ rows) => {
    for (const r of rows) stmt.run(r);
  });
  return {
    insert: (/** @type {object[]} */ rows) => insertMany(rows),
    finish() {
      const t0 = Date.now();
      for (const ix of indexes) db.exec(ix.sql);
      db.pragma('locking_mode = NORMAL');
      db.pragma('journal_mode = WAL');
      db.close();
      return Date.now() - t0;
    },
  };
}

/**
 * What decides a store's content besides this script: the schema the store creates (tables,
 * indexes, version), read from a new empty store at `file`, and the token format.
 * @param {string} file
 */
export async function schemaFingerprint(file) {
  const { SqliteStore } = await dist('store/sqlite/index.js');
  const { TOKEN_PREFIX } = await dist('engine/tokens.js');
  for (const suffix of ['', '-wal', '-shm']) rmSync(file + suffix, { force: true });
  const store = await SqliteStore.open(file);
  const version = await store.schemaVersion();
  await store.close();
  const { default: Database } = await import('better-sqlite3');
  const db = new Database(file, { readonly: true });
  const ddl = db.prepare('SELECT type, name, sql FROM sqlite_master ORDER BY type, name').all();
  db.close();
  for (const suffix of ['', '-wal', '-shm']) rmSync(file + suffix, { force: true });
  return JSON.stringify({ version, ddl, TOKEN_PREFIX });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { values: v } = parseArgs({
    options: {
      schema: { type: 'boolean', default: false },
      db: { type: 'string' }, access: { type: 'string', default: '0' }, refresh: { type: 'string', default: '0' },
      out: { type: 'string' }, sample: { type: 'string' }, 'bulk-client': { type: 'string' }, bulk: { type: 'string', default: '0' },
      codes: { type: 'string', default: '0' },
    },
  });
  if (!v.db) throw new Error('--db FILE is required');
  if (v.schema) {
    process.stdout.write((await schemaFingerprint(v.db)) + '\n');
    process.exit(0);
  }
  const result = await setupStore({
    db: v.db, access: Number(v.access), refresh: Number(v.refresh), out: v.out,
    sample: v.sample === undefined ? undefined : Number(v.sample), bulkClient: v['bulk-client'], bulk: Number(v.bulk),
    codes: Number(v.codes),
  });
  process.stdout.write(JSON.stringify(result) + '\n');
}
