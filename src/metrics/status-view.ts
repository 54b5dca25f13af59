import { parseScrape, quantile, sum, type Sample, type Scrape } from './scrape.js';

/**
 * What `tokenctl status --url` shows of a running server: the few numbers an operator looks at
 * first, from one scrape (totals since the server started) or from two (the interval between).
 */
export interface MetricsStatus {
  url: string;
  /** Seconds between the two scrapes compared; null: totals since the server (or its workers) started. */
  interval_s: number | null;
  endpoints: Record<'token' | 'revocation' | 'introspection', EndpointStatus>;
  /** 401 answers by reason (bad_secret, unknown_client, …), every endpoint. */
  unauthorized: Record<string, number>;
  /** 503 answers (store unavailable or overloaded), every endpoint. */
  unavailable: number;
  /** 5xx other than 503. */
  server_errors: number;
  tokens: { refreshed: number; /** Revocations (a grant counts once). */ revoked: number; reuse_detections: number };
  store: {
    p99_ms: number | null;
    errors: number;
    /** Kept-row cache hits ÷ lookups; null without lookups. */
    row_cache_hit_ratio: number | null;
    /** Writes per group commit, on average; null without commits. */
    commit_batch_avg: number | null;
    pool_in_use: number;
    pool_waiting: number;
  };
  process: { rss_bytes: number; cpu_percent: number | null };
}

export interface EndpointStatus {
  requests: number;
  /** Requests a second over the interval; null for totals. */
  per_second: number | null;
  p50_ms: number | null;
  p99_ms: number | null;
  /** Answers with status ≥ 400. */
  errors: number;
}

const ENDPOINTS = ['token', 'revocation', 'introspection'] as const;

function seriesKey(s: Sample): string {
  return s.name + JSON.stringify(Object.entries(s.labels).sort(([a], [b]) => a.localeCompare(b)));
}

/** Counters and histograms of `now` less those of `before` (a series that went down restarted: taken whole); gauges as in `now`. */
export function difference(now: Scrape, before: Scrape): Scrape {
  const previous = new Map(before.samples.map((s) => [seriesKey(s), s.value]));
  const cumulative = (name: string): boolean => {
    const family = name.replace(/_(bucket|sum|count)$/, '');
    const type = now.types.get(name) ?? now.types.get(family);
    return type === 'counter' || type === 'histogram';
  };
  return {
    types: now.types,
    samples: now.samples.map((s) => {
      if (!cumulative(s.name)) return s;
      const was = previous.get(seriesKey(s)) ?? 0;
      return { ...s, value: s.value >= was ? s.value - was : s.value };
    }),
  };
}

const ms = (seconds: number | undefined): number | null => (seconds === undefined ? null : Math.round(seconds * 100_000) / 100);

/**
 * The status from one scrape's text, or from two taken `intervalS` apart (`before` the earlier).
 */
export function metricsStatus(url: string, nowText: string, before?: { text: string; intervalS: number }): MetricsStatus {
  const now = parseScrape(nowText);
  const s = before ? difference(now, parseScrape(before.text)) : now;
  const interval = before?.intervalS ?? null;
  const endpoints = {} as MetricsStatus['endpoints'];
  for (const endpoint of ENDPOINTS) {
    const requests = sum(s, 'tokenctl_http_requests_total', { endpoint });
    const errors = s.samples.filter((x) => x.name === 'tokenctl_http_requests_total' && x.labels.endpoint === endpoint && Number(x.labels.status) >= 400).reduce((a, x) => a + x.value, 0);
    endpoints[endpoint] = {
      requests,
      per_second: interval === null ? null : Math.round((requests / interval) * 10) / 10,
      p50_ms: ms(quantile(s, 'tokenctl_http_request_duration_seconds', 0.5, { endpoint, outcome: 'ok' })),
      p99_ms: ms(quantile(s, 'tokenctl_http_request_duration_seconds', 0.99, { endpoint, outcome: 'ok' })),
      errors,
    };
  }
  const unauthorized: Record<string, number> = {};
  let unavailable = 0;
  let serverErrors = 0;
  for (const x of s.samples) {
    if (x.name !== 'tokenctl_http_requests_total' || x.value === 0) continue;
    if (x.labels.status === '401') unauthorized[x.labels.reason ?? 'none'] = (unauthorized[x.labels.reason ?? 'none'] ?? 0) + x.value;
    else if (x.labels.status === '503') unavailable += x.value;
    else if (Number(x.labels.status) >= 500) serverErrors += x.value;
  }
  const lookups = sum(s, 'tokenctl_store_row_cache_lookups_total');
  const commits = sum(s, 'tokenctl_store_commit_batch_size_count');
  const cpu = sum(s, 'process_cpu_seconds_total');
  return {
    url,
    interval_s: interval,
    endpoints,
    unauthorized,
    unavailable,
    server_errors: serverErrors,
    tokens: {
      refreshed: sum(s, 'tokenctl_tokens_refreshed_total'),
      revoked: sum(s, 'tokenctl_revocations_total'),
      reuse_detections: sum(s, 'tokenctl_reuse_detections_total'),
    },
    store: {
      p99_ms: ms(quantile(s, 'tokenctl_store_operation_duration_seconds', 0.99)),
      errors: sum(s, 'tokenctl_store_errors_total'),
      row_cache_hit_ratio: lookups === 0 ? null : Math.round((sum(s, 'tokenctl_store_row_cache_lookups_total', { result: 'hit' }) / lookups) * 1000) / 1000,
      commit_batch_avg: commits === 0 ? null : Math.round((sum(s, 'tokenctl_store_commit_batch_size_sum') / commits) * 10) / 10,
      pool_in_use: sum(s, 'tokenctl_store_pool_in_use'),
      pool_waiting: sum(s, 'tokenctl_store_pool_waiting'),
    },
    process: {
      rss_bytes: sum(s, 'process_resident_memory_bytes'),
      cpu_percent: interval === null ? null : Math.round((cpu / interval) * 1000) / 10,
    },
  };
}
