import type { ClientAction } from '../engine/results.js';
import type { AnswerObserver, AnswerRecord, EndpointName } from '../http/observer.js';
import type { BoundCounter, BoundHistogram } from './bound.js';
import type { TokenctlMetrics } from './metrics.js';

export interface HttpObserverOptions {
  /** `--metrics-client-label`: count answers per authenticated client too (default off). */
  clientLabel?: boolean;
  /** `--metrics-max-clients`: distinct client labels at most; later clients count as "other". */
  maxClients?: number;
}

/** Label combinations at most per metric; past it, outcome and reason read "other" (a guard: tokenctl's vocabularies are far smaller). */
const MAX_SERIES = 1000;
const OTHER = 'other';

type Inc = BoundCounter;
type Observe = BoundHistogram;
interface Series {
  requests: Inc;
  duration: Observe;
}

/** What the engine did, or the error code: the `outcome` label of tokenctl_http_requests_total. */
function outcomeLabel(record: AnswerRecord): string {
  const outcome: ClientAction | null = record.outcome;
  if (outcome !== null) {
    if (outcome.kind === 'introspected') return outcome.active ? 'active' : 'inactive';
    return outcome.kind;
  }
  return record.errorCode ?? (record.status < 400 ? 'ok' : 'error');
}

/** The outcome class of the latency histogram: few values, so the buckets stay few. */
function durationOutcome(status: number): string {
  if (status < 400) return 'ok';
  if (status === 401) return 'unauthorized';
  if (status === 429) return 'rate_limited';
  if (status === 503) return 'unavailable';
  return status < 500 ? 'client_error' : 'server_error';
}

/**
 * The observer `buildServer` calls once per answer: feeds the request counters and histograms.
 * Label children are looked up in nested maps built on first sight of each combination, so an
 * answer allocates nothing (no label object, no joined key) once its combination has been seen.
 */
export function httpObserver(metrics: TokenctlMetrics, options: HttpObserverOptions = {}): AnswerObserver {
  const byEndpoint = new Map<EndpointName, Map<number, Map<string, Map<string, Series>>>>();
  let series = 0;
  const seriesFor = (endpoint: EndpointName, status: number, outcome: string, reason: string): Series => {
    let byStatus = byEndpoint.get(endpoint);
    if (byStatus === undefined) byEndpoint.set(endpoint, (byStatus = new Map()));
    let byOutcome = byStatus.get(status);
    if (byOutcome === undefined) byStatus.set(status, (byOutcome = new Map()));
    let byReason = byOutcome.get(outcome);
    if (byReason === undefined) byOutcome.set(outcome, (byReason = new Map()));
    let found = byReason.get(reason);
    if (found === undefined) {
      if (series >= MAX_SERIES && (outcome !== OTHER || reason !== OTHER)) return seriesFor(endpoint, status, OTHER, OTHER);
      series++;
      found = {
        requests: metrics.requests.labels(endpoint, String(status), outcome, reason),
        duration: metrics.requestDuration.labels(endpoint, durationOutcome(status)),
      };
      byReason.set(reason, found);
    }
    return found;
  };

  const refreshed = { rotated: metrics.tokensRefreshed.labels('true'), kept: metrics.tokensRefreshed.labels('false') };
  const revoked = {
    single: metrics.revocations.labels('single'),
    grant: metrics.revocations.labels('grant'),
    reuse: metrics.revocations.labels('reuse_detection'),
  };
  const reuseDetections = metrics.reuseDetections.labels();
  const reuseTokens = metrics.reuseRevokedTokens.labels();
  const authFailures = new Map<string, Inc>();
  const clients = options.clientLabel ? clientCounter(metrics, options.maxClients ?? 100) : undefined;

  return (record) => {
    const outcome = outcomeLabel(record);
    const s = seriesFor(record.endpoint, record.status, outcome, record.reason ?? 'none');
    s.requests.inc();
    s.duration.observe(record.durationMs / 1000);
    const done = record.outcome;
    if (done !== null) {
      if (done.kind === 'refreshed') (done.rotated ? refreshed.rotated : refreshed.kept).inc();
      else if (done.kind === 'revoked') (done.grant ? revoked.grant : revoked.single).inc();
      else if (done.kind === 'reuse_detected') {
        reuseDetections.inc();
        revoked.reuse.inc();
        reuseTokens.inc(done.tokens);
      }
    } else if (record.errorCode === 'invalid_client') {
      const reason = record.reason ?? 'none';
      let child = authFailures.get(reason);
      if (child === undefined) {
        if (authFailures.size >= MAX_SERIES) return;
        authFailures.set(reason, (child = metrics.clientAuthFailures.labels(reason)));
      }
      child.inc();
      return; // the client id of a failed authentication is whatever the caller claimed: never a label
    }
    if (clients !== undefined && record.clientId !== null) clients(record.clientId, record.endpoint, outcome);
  };
}

/**
 * Per-client counting, bounded: the first `maxClients` distinct authenticated clients get their
 * own label, every later one counts as client="other". Only clients that authenticated reach it
 * (they are registered in the store), so an attacker cannot mint labels.
 */
function clientCounter(metrics: TokenctlMetrics, maxClients: number): (client: string, endpoint: EndpointName, outcome: string) => void {
  const named = new Set<string>();
  const children = new Map<string, Inc>();
  return (client, endpoint, outcome) => {
    let label = client;
    if (!named.has(client)) {
      if (named.size >= maxClients) label = OTHER;
      else named.add(client);
    }
    const key = `${label}\u0000${endpoint}\u0000${outcome}`;
    let child = children.get(key);
    if (child === undefined) children.set(key, (child = metrics.clientRequests.labels(label, endpoint, outcome)));
    child.inc();
  };
}
