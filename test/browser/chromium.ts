import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core';

/**
 * Debian's Chromium driven by playwright-core, for the tests that need a real browser (the
 * development login page, the interop suite's logins, the example login app). Never a
 * downloaded browser: without /usr/bin/chromium these tests skip, saying so.
 */
export const CHROMIUM = '/usr/bin/chromium';
export const HAS_CHROMIUM = existsSync(CHROMIUM);
export const NO_CHROMIUM_MESSAGE = `real-browser tests skipped: no ${CHROMIUM} (apt-get install -y chromium, as .ci/run does)`;
// Said once per test file that needs the browser, as the PgBouncer and NGINX tests do.
if (!HAS_CHROMIUM) console.warn(NO_CHROMIUM_MESSAGE);

/** Headless, no sandbox (containers have no user namespaces), and nothing that phones home during a test. */
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export interface Chromium {
  context: BrowserContext;
  /** The context's first page, reused by the tests of a file. */
  page: Page;
  close(): Promise<void>;
}

/** One browser for a test file, on a fresh profile directory that is removed at close. */
export async function launchChromium(options: Pick<BrowserContextOptions, 'colorScheme' | 'ignoreHTTPSErrors' | 'viewport'> = {}): Promise<Chromium> {
  const dir = mkdtempSync(join(tmpdir(), 'tokenctl-chromium-'));
  const context = await chromium.launchPersistentContext(dir, { executablePath: CHROMIUM, headless: true, args: ARGS, ...options });
  // A browser test waits on a real browser on a shared two-core machine: generous, not endless.
  context.setDefaultTimeout(15_000);
  const page = context.pages()[0] ?? (await context.newPage());
  return {
    context,
    page,
    async close() {
      await context.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** What a page said on its console, and the errors thrown in it, from now on. */
export function watchConsole(page: Page): { messages: string[]; errors: string[] } {
  const seen = { messages: [] as string[], errors: [] as string[] };
  page.on('console', (m) => seen.messages.push(`${m.type()}: ${m.text()}`));
  page.on('pageerror', (e) => seen.errors.push(e.message));
  return seen;
}

export interface LoopbackApp {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** The query of every request to `/callback`, in order. */
  callbacks: URLSearchParams[];
  close(): Promise<void>;
}

/**
 * A client application on 127.0.0.1 (RFC 8252 §7.3: a loopback redirect URI): `/callback`
 * records the authorization response, and `extra` may answer other paths.
 */
export async function startLoopbackApp(extra: (req: IncomingMessage, res: ServerResponse, url: URL) => boolean = () => false): Promise<LoopbackApp> {
  const callbacks: URLSearchParams[] = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (url.pathname === '/callback') {
      callbacks.push(url.searchParams);
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<!doctype html><title>Back at the app</title><p id="app">back at the app</p>');
      return;
    }
    if (!extra(req, res, url)) res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    callbacks,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * The few browser globals the tests read inside a page, as `(globalThis as unknown as InPage)`
 * in the function given to `evaluate` (the project compiles without the DOM library).
 */
export interface InPage {
  document: { activeElement: { id: string; textContent: string | null } | null };
  getComputedStyle(element: unknown): { getPropertyValue(name: string): string; outlineWidth: string };
}

/**
 * The browser part of a login through the development page: open the authorization URL, type
 * the user name, press Enter, and return the URL the browser lands on at `redirectUri` (the
 * authorization response, RFC 6749 §4.1.2).
 */
export async function signInOnDevPage(page: Page, authorizationUrl: URL | string, username: string, redirectUri: string): Promise<URL> {
  await page.goto(String(authorizationUrl));
  await page.locator('#username').fill(username);
  await page.keyboard.press('Enter');
  await page.waitForURL((u) => u.href.startsWith(redirectUri));
  return new URL(page.url());
}
