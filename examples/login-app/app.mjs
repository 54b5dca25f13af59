#!/usr/bin/env node
// A login app for `tokenctl serve --login-url http://127.0.0.1:3000/login` (docs/login.md): it checks
// the password itself, so tokenctl never sees it, and tells tokenctl who logged in over the back channel.
// Environment: TOKENCTL_URL, LOGIN_CLIENT_ID and LOGIN_CLIENT_SECRET (a client created with
// --login-provider), PORT (default 3000). For a self-signed tokenctl, NODE_EXTRA_CA_CERTS=its certificate.
/* global fetch, URLSearchParams */
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';

const { TOKENCTL_URL, LOGIN_CLIENT_ID, LOGIN_CLIENT_SECRET, PORT = '3000' } = process.env;
if (!TOKENCTL_URL || !LOGIN_CLIENT_ID || !LOGIN_CLIENT_SECRET) {
  console.error('set TOKENCTL_URL, LOGIN_CLIENT_ID and LOGIN_CLIENT_SECRET (tokenctl client create --name "Login app" --login-provider)');
  process.exit(2);
}
// Without a trailing slash, so that the paths below stay tokenctl's (an issuer is often copied with one).
const TOKENCTL = TOKENCTL_URL.replace(/\/+$/, '');
const USER = { subject: 'user-0001', username: 'alice', password: 'correct horse battery staple' }; // your user database
// RFC 6749 §2.3.1: HTTP Basic of the form-encoded client id and secret.
const basic = 'Basic ' + Buffer.from(`${encodeURIComponent(LOGIN_CLIENT_ID)}:${encodeURIComponent(LOGIN_CLIENT_SECRET)}`).toString('base64');

/** GET (no body) or POST (a JSON body) on tokenctl's login API for one challenge. */
async function loginApi(challenge, action = '', body = undefined) {
  const res = await fetch(`${TOKENCTL}/oauth/login-requests/${encodeURIComponent(challenge)}${action}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: basic, ...(body !== undefined && { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { ok: res.ok, body: await res.json() };
}

const esc = (s) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const same = (a, b) => timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());

function send(res, status, body) {
  // No script, not framable (a login form in a frame is clickjacking), never cached.
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'content-security-policy': "default-src 'none'; frame-ancestors 'none'", 'referrer-policy': 'same-origin' });
  res.end(`<!doctype html><meta charset="utf-8"><title>Sign in</title>${body}`);
}

const form = (challenge, request, error = '') => `<h1>Sign in to ${esc(request.client_name)}</h1>
<p>It asks for: ${esc(request.scope || 'no particular access')}</p>${error && `<p id="error" role="alert">${esc(error)}</p>`}
<form method="post" action="/login"><input type="hidden" name="login_challenge" value="${esc(challenge)}">
<label>User name <input name="username" autocomplete="username" required autofocus></label>
<label>Password <input name="password" type="password" autocomplete="current-password" required></label>
<button name="action" value="accept">Sign in</button> <button name="action" value="reject" formnovalidate>Cancel</button></form>`;

async function handle(req, res) {
  const url = new URL(req.url, 'http://login.invalid');
  if (url.pathname !== '/login' || !['GET', 'POST'].includes(req.method)) return send(res, 404, '<p>Not found</p>');
  let fields = url.searchParams;
  if (req.method === 'POST') {
    let raw = '';
    for await (const chunk of req) if ((raw += chunk).length > 10_000) return send(res, 413, '<p>Too large</p>');
    fields = new URLSearchParams(raw);
  }
  // The challenge is an unguessable secret of this one login, so a form posted without it is refused: no CSRF token needed.
  const challenge = fields.get('login_challenge') ?? '';
  const request = await loginApi(challenge);
  if (!request.ok) return send(res, 400, `<h1>This sign-in cannot go on</h1><p>${esc(request.body.error_description)}</p>`);
  if (req.method === 'GET') return send(res, 200, form(challenge, request.body));

  let answer;
  if (fields.get('action') === 'reject') answer = await loginApi(challenge, '/reject', { error: 'access_denied', error_description: 'The user cancelled the sign-in' });
  else if (fields.get('username') === USER.username && same(fields.get('password') ?? '', USER.password)) answer = await loginApi(challenge, '/accept', { subject: USER.subject, username: USER.username });
  else return send(res, 401, form(challenge, request.body, 'Wrong user name or password.'));
  if (!answer.ok) return send(res, 400, `<h1>This sign-in cannot go on</h1><p>${esc(answer.body.error_description)}</p>`);
  res.writeHead(303, { location: answer.body.redirect_to }).end(); // back to tokenctl, then on to the application
}

createServer((req, res) => handle(req, res).catch(() => send(res, 502, '<p>tokenctl cannot be reached; try again.</p>'))).listen(Number(PORT), '127.0.0.1', function () {
  process.stdout.write(`login app listening on http://127.0.0.1:${this.address().port}/login\n`);
});
