/**
 * A browser for the authorization code flow, without a browser: fetch with manual redirects and
 * a cookie jar (enough for one host), and the development login page (`serve --dev-login`)
 * filled in as a user would.
 */
export class Browser {
  private cookies = new Map<string, string>();

  /** `fetchImpl`: another fetch, e.g. one that trusts a test CA (server.ts `fetchTrusting`). */
  constructor(private readonly fetchImpl: typeof fetch = fetch) {}

  async get(url: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    if (this.cookies.size > 0) headers.set('cookie', [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; '));
    const r = await this.fetchImpl(url, { ...init, headers, redirect: 'manual' });
    for (const c of r.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const eq = pair!.indexOf('=');
      this.cookies.set(pair!.slice(0, eq), pair!.slice(eq + 1));
    }
    return r;
  }
}

export interface DevLoginChoice {
  /** The user name typed on the page [default: zoe]. */
  username?: string;
  /** Cancel instead of signing in. */
  deny?: boolean;
  /** Changes the redirect to the client (the loopback callback) before the browser follows it. */
  tamper?: (callback: URL) => void;
  /** The fetch to use towards the server (the loopback callback is plain HTTP: global fetch). */
  fetch?: typeof fetch;
}

/** What the browser ended with: the callback URL it was sent to, and the page the client showed there. */
export interface DevLoginOutcome {
  callback: URL;
  status: number;
  page: string;
}

/**
 * Opens `authorizeUrl` and goes through the development login to the client's redirect URI:
 * GET authorize → the login page → POST the form with its csrf_token → continue → the callback.
 */
export async function devLogin(authorizeUrl: string, choice: DevLoginChoice = {}): Promise<DevLoginOutcome> {
  const browser = new Browser(choice.fetch);
  const start = await browser.get(authorizeUrl);
  const loginUrl = expectRedirect(start, authorizeUrl, 'GET /oauth/authorize');
  const page = await browser.get(loginUrl.href);
  const html = await page.text();
  if (page.status !== 200) throw new Error(`the login page answered ${page.status}: ${html.slice(0, 300)}`);
  const csrf = /name="csrf_token" value="([^"]+)"/.exec(html)?.[1];
  if (csrf === undefined) throw new Error('no csrf_token on the login page');
  const form = new URLSearchParams({ login_challenge: loginUrl.searchParams.get('login_challenge') ?? '', csrf_token: csrf, username: choice.username ?? 'zoe', decision: choice.deny ? 'deny' : 'accept' });
  const postUrl = new URL('/oauth/dev-login', loginUrl).href;
  const posted = await browser.get(postUrl, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', origin: loginUrl.origin }, body: form });
  const continueUrl = expectRedirect(posted, postUrl, 'POST /oauth/dev-login');
  const back = await browser.get(continueUrl.href);
  const callback = expectRedirect(back, continueUrl.href, 'GET /oauth/authorize/continue');
  choice.tamper?.(callback);
  const answer = await new Browser().get(callback.href);
  return { callback, status: answer.status, page: await answer.text() };
}

function expectRedirect(r: Response, requested: string, what: string): URL {
  const location = r.headers.get('location');
  if (r.status < 300 || r.status > 399 || location === null) throw new Error(`${what} answered ${r.status}, not a redirect`);
  return new URL(location, requested);
}
