/**
 * The login client, run as its own process (pinned to the load core by bench/run.js): one
 * browser after another goes through the whole authorization code flow against a
 * `serve --dev-login` on 127.0.0.1, one round trip at a time, and each round trip is timed:
 *
 *   GET /oauth/authorize → GET the development login page → POST its form → GET continue
 *   → the code in the redirect to the client → POST /oauth/token (grant_type=authorization_code)
 *
 * Each round trip is a new browser (a cookie jar of its own) and a new PKCE pair (RFC 7636), as
 * a new user of a native app would be; the redirect to the client is read, never followed.
 *
 * Usage: node bench/lib/login-worker.js <config.json>
 * Config: { url, client: { id, secret, redirectUri }, seconds, warmup }; prints
 * `result <JSON>` (milliseconds) at the end.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { URLSearchParams } from 'node:url';
import { performance } from 'node:perf_hooks';

/** @type {{ url: string, client: { id: string, secret: string, redirectUri: string }, seconds: number, warmup: number }} */
const cfg = JSON.parse(readFileSync(/** @type {string} */ (process.argv[2]), 'utf8'));
const origin = new URL(cfg.url).origin;
if (new URL(cfg.url).hostname !== '127.0.0.1') throw new Error(`refusing to contact ${cfg.url}: only 127.0.0.1 is ever targeted`);
// Spec part 5 scenario I, as the code exchange figure authenticates.
const authorization = 'Basic ' + Buffer.from(`${cfg.client.id}:${Buffer.from(cfg.client.secret).toString('base64')}`).toString('base64');
const STEPS = /** @type {const} */ (['authorize', 'login_page', 'login_post', 'continue', 'token']);

/** A browser of one host: manual redirects and the cookies it was given. */
class Browser {
  /** @type {Map<string, string>} */
  cookies = new Map();

  /** @param {string} url @param {RequestInit} [init] */
  async fetch(url, init = {}) {
    if (new URL(url).origin !== origin) throw new Error(`the flow left the server: ${url.slice(0, 120)}`);
    const headers = new globalThis.Headers(init.headers);
    if (this.cookies.size > 0) headers.set('cookie', [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; '));
    const r = await globalThis.fetch(url, { ...init, headers, redirect: 'manual' });
    for (const c of r.headers.getSetCookie()) {
      const pair = c.split(';')[0] ?? '';
      const eq = pair.indexOf('=');
      this.cookies.set(pair.slice(0, eq), pair.slice(eq + 1));
    }
    return r;
  }
}

/** @param {Response} r @param {string} what */
async function redirectOf(r, what) {
  const location = r.headers.get('location');
  await r.arrayBuffer();
  if (r.status < 300 || r.status > 399 || location === null) throw new Error(`${what} answered ${r.status}, not a redirect`);
  return new URL(location, origin);
}

/** One login, start to tokens; returns each step's milliseconds. */
async function roundTrip() {
  const browser = new Browser();
  const verifier = randomBytes(32).toString('base64url');
  const state = randomBytes(16).toString('base64url');
  const query = new URLSearchParams({
    response_type: 'code', client_id: cfg.client.id, redirect_uri: cfg.client.redirectUri, scope: 'read', state,
    code_challenge: createHash('sha256').update(verifier, 'ascii').digest('base64url'), code_challenge_method: 'S256',
  });
  /** @type {number[]} */
  const times = [];
  let t = performance.now();
  const lap = () => {
    const now = performance.now();
    times.push(now - t);
    t = now;
  };
  const login = await redirectOf(await browser.fetch(`${origin}/oauth/authorize?${query}`), 'GET /oauth/authorize');
  lap();
  const page = await browser.fetch(login.href);
  const html = await page.text();
  if (page.status !== 200) throw new Error(`the login page answered ${page.status}`);
  const csrf = /name="csrf_token" value="([^"]+)"/.exec(html)?.[1];
  if (csrf === undefined) throw new Error('no csrf_token on the login page');
  lap();
  const form = new URLSearchParams({ login_challenge: login.searchParams.get('login_challenge') ?? '', csrf_token: csrf, username: `user-${state.slice(0, 6)}`, decision: 'accept' });
  const cont = await redirectOf(await browser.fetch(`${origin}/oauth/dev-login`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', origin }, body: form }), 'POST /oauth/dev-login');
  lap();
  const r = await browser.fetch(cont.href);
  const location = r.headers.get('location');
  await r.arrayBuffer();
  if (r.status < 300 || r.status > 399 || location === null) throw new Error(`GET /oauth/authorize/continue answered ${r.status}, not a redirect`);
  const callback = new URL(location);
  const code = callback.searchParams.get('code');
  if (callback.origin + callback.pathname !== cfg.client.redirectUri) throw new Error(`redirected to ${location.slice(0, 100)}, not the client`);
  if (code === null || callback.searchParams.get('state') !== state) throw new Error(`the redirect to the client has no code or another state: ${callback.search.slice(0, 200)}`);
  lap();
  const body = new URLSearchParams({ grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: cfg.client.redirectUri });
  const token = await globalThis.fetch(`${origin}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', authorization }, body });
  const json = /** @type {any} */ (await token.json().catch(() => null));
  if (token.status !== 200 || typeof json?.access_token !== 'string') throw new Error(`the token request answered ${token.status}: ${JSON.stringify(json).slice(0, 200)}`);
  lap();
  return times;
}

/** @param {number[]} xs @param {number} q */
function quantile(xs, q) {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  return /** @type {number} */ (s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]);
}

// The first logins warm up this process's own code paths (undici, the JIT), untimed.
for (let i = 0; i < cfg.warmup; i++) await roundTrip();
/** @type {number[][]} */
const samples = [];
/** @type {string[]} */
const failures = [];
const end = performance.now() + cfg.seconds * 1000;
while (performance.now() < end) {
  try {
    samples.push(await roundTrip());
  } catch (err) {
    failures.push(err instanceof Error ? err.message : String(err));
  }
}
const totals = samples.map((s) => s.reduce((a, b) => a + b, 0));
const round1 = (/** @type {number|null} */ v) => (v === null ? null : Math.round(v * 10) / 10);
const out = {
  samples: samples.length,
  failures: failures.length,
  first_failures: [...new Set(failures)].slice(0, 3),
  p50_ms: round1(quantile(totals, 0.5)),
  p90_ms: round1(quantile(totals, 0.9)),
  p99_ms: round1(quantile(totals, 0.99)),
  max_ms: round1(quantile(totals, 1)),
  step_p50_ms: Object.fromEntries(STEPS.map((name, i) => [name, round1(quantile(samples.map((s) => /** @type {number} */ (s[i])), 0.5))])),
  step_p99_ms: Object.fromEntries(STEPS.map((name, i) => [name, round1(quantile(samples.map((s) => /** @type {number} */ (s[i])), 0.99))])),
};
process.stdout.write(`result ${JSON.stringify(out)}\n`);
process.exit(0);
