import { createHash } from 'node:crypto';

/**
 * The server's HTML pages (the development login, and the errors of the authorization endpoint
 * that must not go back to a client): rendered on the server, one inline style sheet, no script,
 * no external asset. The Content-Security-Policy allows that style sheet by its hash and nothing
 * else, and no page may be framed (clickjacking, RFC 6749 §10.13).
 */

const CSS = `
:root { color-scheme: light dark; --bg: #f4f5f7; --card: #fff; --text: #1c1e21; --muted: #5b6270; --line: #d8dbe0;
  --accent: #1f5fd1; --accent-text: #fff; --warn-bg: #fff4d6; --warn-text: #6b4d00; --danger: #b3261e; }
@media (prefers-color-scheme: dark) { :root { --bg: #15171a; --card: #202329; --text: #e8eaed; --muted: #a4abb6;
  --line: #3a3f47; --accent: #7aa7ff; --accent-text: #0b1a33; --warn-bg: #3b3000; --warn-text: #ffe08a; --danger: #ff8a80; } }
* { box-sizing: border-box; }
body { margin: 0; min-height: 100vh; display: flex; align-items: center; justify-content: center; padding: 24px;
  background: var(--bg); color: var(--text); font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
main { width: 100%; max-width: 440px; background: var(--card); border: 1px solid var(--line); border-radius: 12px; padding: 28px; }
h1 { font-size: 1.35rem; margin: 0 0 12px; }
p { margin: 0 0 12px; }
.muted { color: var(--muted); font-size: .9rem; }
.badge { display: inline-block; margin: 0 0 16px; padding: 4px 10px; border-radius: 999px; background: var(--warn-bg);
  color: var(--warn-text); font-size: .8rem; font-weight: 600; }
.error h1 { color: var(--danger); }
ul.scopes { margin: 0 0 16px; padding-left: 20px; }
code { font: .9em ui-monospace, SFMono-Regular, Menlo, monospace; overflow-wrap: anywhere; }
label { display: block; font-weight: 600; margin: 16px 0 6px; }
input[type=text] { width: 100%; padding: 10px 12px; font: inherit; color: inherit; background: transparent;
  border: 1px solid var(--line); border-radius: 8px; }
.actions { display: flex; gap: 12px; margin-top: 20px; }
button { flex: 1; padding: 10px 16px; font: inherit; font-weight: 600; border-radius: 8px; cursor: pointer;
  border: 1px solid var(--line); background: transparent; color: inherit; }
button.primary { background: var(--accent); border-color: var(--accent); color: var(--accent-text); }
input:focus-visible, button:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
`;

const STYLE_HASH = createHash('sha256').update(CSS).digest('base64');

/**
 * The headers of every page: not cached, not framed, no script, and no referrer to other origins
 * (its URL holds the login challenge). `same-origin`, not `no-referrer`: under `no-referrer` a
 * browser sends the page's own form POST with `Origin: null` (Fetch, "serializing a request
 * origin"), which the development login's origin check must refuse.
 */
export const PAGE_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  pragma: 'no-cache',
  'content-security-policy': `default-src 'none'; style-src 'sha256-${STYLE_HASH}'; base-uri 'none'; frame-ancestors 'none'`,
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
};

/** `text` made safe inside HTML text and double-quoted attributes. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** A whole page: `body` is HTML already escaped by its maker. */
export function page(title: string, body: string, className = ''): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${escapeHtml(title)}</title>
<style>${CSS}</style>
</head>
<body>
<main${className ? ` class="${className}"` : ''}>
${body}
</main>
</body>
</html>
`;
}

/** The page of a request that cannot go on (RFC 6749 §4.1.2.1: told to the user, not redirected). */
export function errorPage(title: string, description: string, error?: string): string {
  return page(
    title,
    `<h1>${escapeHtml(title)}</h1>
<p>${escapeHtml(description)}</p>
${error ? `<p class="muted">Error: <code>${escapeHtml(error)}</code></p>` : ''}
<p class="muted">Go back to the application and try again. If this keeps happening, tell its developers.</p>`,
    'error',
  );
}
