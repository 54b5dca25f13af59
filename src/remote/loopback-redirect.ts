import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The loopback redirect of a native app (RFC 8252 §7.3): an HTTP listener on 127.0.0.1 whose
 * `/callback` receives the authorization response from the user's browser. The address is the IP
 * literal, not `localhost`, so that no other interface or name resolution is involved (§8.3).
 */

export const CALLBACK_PATH = '/callback';

/** What the browser is shown once the response has been dealt with. */
export interface CallbackPage {
  ok: boolean;
  title: string;
  text: string;
}

/** One authorization response: its query parameters, and the page to answer the browser with. */
export interface Callback {
  params: URLSearchParams;
  /** Answers the waiting browser; resolves once the page is sent. */
  answer(page: CallbackPage): Promise<void>;
}

export interface LoopbackRedirect {
  /** `http://127.0.0.1:<port>/callback`: the redirect_uri of the authorization request. */
  redirectUri: string;
  /** The first request to the callback path. */
  callback: Promise<Callback>;
  /** Stops listening and ends every connection. */
  close(): Promise<void>;
}

/** The port could not be listened on (in use, or not allowed). */
export class LoopbackListenError extends Error {
  constructor(
    message: string,
    readonly port: number,
  ) {
    super(message);
    this.name = 'LoopbackListenError';
  }
}

/** Listens on 127.0.0.1:`port` (0: a free one) for the browser's return. */
export async function listenForRedirect(port: number): Promise<LoopbackRedirect> {
  let deliver!: (cb: Callback) => void;
  const callback = new Promise<Callback>((resolve) => (deliver = resolve));
  let taken = false;
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (url.pathname !== CALLBACK_PATH) return send(res, 404, { ok: false, title: 'Not found', text: 'This address only receives the sign-in response of tokenctl login.' });
    if (req.method !== 'GET') return send(res, 405, { ok: false, title: 'Method not allowed', text: 'The sign-in response comes as a GET.' });
    // Only the first response counts: the login waits for one, and a second can only be a replay.
    if (taken) return send(res, 409, { ok: false, title: 'This sign-in is already finished', text: 'tokenctl login took the first response it got. You can close this tab.' });
    taken = true;
    deliver({ params: url.searchParams, answer: (page) => send(res, page.ok ? 200 : 400, page) });
  });
  // A browser's speculative connection must not keep the command alive after the login.
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => reject(listenError(err, port)));
    server.listen({ host: '127.0.0.1', port }, resolve);
  });
  const actual = (server.address() as AddressInfo).port;
  return {
    redirectUri: `http://127.0.0.1:${actual}${CALLBACK_PATH}`,
    callback,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function listenError(err: NodeJS.ErrnoException, port: number): Error {
  if (err.code === 'EADDRINUSE') return new LoopbackListenError(`port ${port} on 127.0.0.1 is already in use`, port);
  if (err.code === 'EACCES') return new LoopbackListenError(`not allowed to listen on 127.0.0.1:${port}`, port);
  return err;
}

/** A small plain page: no script, no external resource, not framable, not cached (it follows a URL with a code). */
function send(res: ServerResponse<IncomingMessage>, status: number, page: CallbackPage): Promise<void> {
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(page.title)} – tokenctl</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem;color:#222}h1{font-size:1.4rem;color:${page.ok ? '#1a7f37' : '#b42318'}}</style></head>
<body><h1>${escapeHtml(page.title)}</h1><p>${escapeHtml(page.text)}</p></body></html>
`;
  return new Promise((resolve) => {
    res.writeHead(status, {
      'content-type': 'text/html; charset=utf-8',
      'content-length': Buffer.byteLength(html),
      'cache-control': 'no-store',
      'referrer-policy': 'no-referrer',
      'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
      'x-content-type-options': 'nosniff',
      connection: 'close',
    });
    res.end(html, () => resolve());
  });
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
