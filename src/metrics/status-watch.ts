import { metricsStatus, type MetricsStatus } from './status-view.js';

/** `http://host:port` alone means its `/metrics`. */
export function metricsUrl(url: string): string {
  const parsed = new URL(url);
  if (parsed.pathname === '/' || parsed.pathname === '') parsed.pathname = '/metrics';
  return parsed.href;
}

/** One scrape's text; a clear error when the server does not answer or answers something else. */
export async function scrapeText(url: string, timeoutMs = 5000): Promise<string> {
  let res: Response;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error instanceof Error ? error.message : String(error));
    throw new Error(`no metrics at ${url}: ${cause}`);
  }
  const text = await res.text();
  if (res.status !== 200) throw new Error(`no metrics at ${url}: HTTP ${res.status} ${text.trim().slice(0, 200)}`);
  if (!text.includes('# TYPE tokenctl_http_requests_total')) throw new Error(`${url} answers, but not with tokenctl's metrics (is it serve --metrics-port?)`);
  return text;
}

/** The status from one scrape: totals since the server started. */
export async function statusOnce(url: string): Promise<MetricsStatus> {
  return metricsStatus(url, await scrapeText(url));
}

/**
 * Scrapes every `intervalS` seconds and shows each interval's status, until `signal` aborts (Ctrl-C)
 * or `rounds` intervals were shown. The first view is the totals, at once.
 */
export async function watchStatus(url: string, intervalS: number, show: (status: MetricsStatus) => void, signal: AbortSignal, rounds = Infinity): Promise<void> {
  let text = await scrapeText(url);
  let at = performance.now();
  show(metricsStatus(url, text));
  for (let round = 0; round < rounds && !signal.aborted; round++) {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, intervalS * 1000);
      signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
    });
    if (signal.aborted) return;
    const next = await scrapeText(url);
    const now = performance.now();
    show(metricsStatus(url, next, { text, intervalS: (now - at) / 1000 }));
    text = next;
    at = now;
  }
}
