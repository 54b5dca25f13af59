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
    throw new Error(`no metrics at ${url}: ${whyNoAnswer(error, url)}`);
  }
  const text = await res.text();
  if (res.status !== 200) throw new Error(`no metrics at ${url}: HTTP ${res.status} ${text.trim().slice(0, 200)}`);
  if (!text.includes('# TYPE tokenctl_http_requests_total')) throw new Error(`${url} answers, but not with tokenctl's metrics (is it serve --metrics-port?)`);
  return text;
}

/** Why fetch got no answer, in words: its own message is only "fetch failed", the reason is in its cause. */
function whyNoAnswer(error: unknown, url: string): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  const words: Record<string, string> = { ECONNREFUSED: 'connection refused', ENOTFOUND: 'no such host', ECONNRESET: 'the connection was reset', ETIMEDOUT: 'timed out' };
  if (cause?.code !== undefined) return words[cause.code] ?? cause.code;
  // WHATWG fetch refuses some ports (6000, 6665-6669, …) before connecting.
  if (cause?.message === 'bad port') return `fetch refuses port ${new URL(url).port} (one of the ports it blocks): serve the metrics on another --metrics-port`;
  if ((error as Error).name === 'TimeoutError') return 'no answer in time';
  return cause?.message ?? (error instanceof Error ? error.message : String(error));
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
