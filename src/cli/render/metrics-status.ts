import type { MetricsStatus } from '../../metrics/status-view.js';

const n = (value: number): string => (Number.isInteger(value) ? String(value) : value.toFixed(1));
const orDash = (value: number | null, unit = ''): string => (value === null ? '-' : `${n(value)}${unit}`);

function columns(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ').trimEnd()).join('\n');
}

/** The status as a terminal shows it: a table per endpoint, then one line per concern. */
export function renderMetricsStatus(s: MetricsStatus): string {
  const live = s.interval_s !== null;
  const header = live ? `${s.url}: the last ${n(s.interval_s!)} s` : `${s.url}: totals since the server started`;
  const table = columns([
    ['', live ? 'REQ/S' : 'REQUESTS', 'P50 MS', 'P99 MS', 'ERRORS'],
    ...Object.entries(s.endpoints).map(([name, e]) => [name, live ? n(e.per_second ?? 0) : n(e.requests), orDash(e.p50_ms), orDash(e.p99_ms), n(e.errors)]),
  ]);
  const reasons = Object.entries(s.unauthorized).sort((a, b) => b[1] - a[1]);
  const lines = [
    `401: ${reasons.length === 0 ? '0' : reasons.map(([reason, count]) => `${n(count)} ${reason}`).join(', ')}   503: ${n(s.unavailable)}   other 5xx: ${n(s.server_errors)}`,
    `tokens: ${n(s.tokens.refreshed)} refreshed, ${n(s.tokens.revoked)} revoked, ${n(s.tokens.reuse_detections)} reuse detections`,
    `store: p99 ${orDash(s.store.p99_ms, ' ms')}, ${n(s.store.errors)} errors, row cache hits ${s.store.row_cache_hit_ratio === null ? '-' : `${(s.store.row_cache_hit_ratio * 100).toFixed(1)}%`}, commit batch ${orDash(s.store.commit_batch_avg)}, pool ${n(s.store.pool_in_use)} in use / ${n(s.store.pool_waiting)} waiting`,
    `process: ${(s.process.rss_bytes / 1048576).toFixed(0)} MiB resident${s.process.cpu_percent === null ? '' : `, ${n(s.process.cpu_percent)}% CPU`}`,
  ];
  return [header, '', table.replace(/^/gm, '  '), '', ...lines].join('\n');
}
