/**
 * From the repetitions to the figures of bench/results/latest.json: every figure and every
 * ratio is computed within one repetition (contenders measured minutes apart on a shared
 * machine are not comparable, contenders measured seconds apart are), then the median across
 * repetitions is reported. Also the readable tables.
 */

/** @param {(number|null|undefined)[]} xs @returns {number|null} */
export function median(xs) {
  const s = /** @type {number[]} */ (xs.filter((x) => typeof x === 'number' && Number.isFinite(x))).sort((a, b) => a - b);
  if (s.length === 0) return null;
  const m = s.length >> 1;
  return s.length % 2 ? /** @type {number} */ (s[m]) : (/** @type {number} */ (s[m - 1]) + /** @type {number} */ (s[m])) / 2;
}

/** @param {number|null|undefined} a @param {number|null|undefined} b */
const ratio = (a, b) => (typeof a === 'number' && typeof b === 'number' && b > 0 ? a / b : null);

/**
 * Requests per CPU-second of the server and, on PostgreSQL, of its backends (not the database's
 * background processes, which anyone else using that database shares).
 * @param {import('./measure.js').LoadResult|undefined} r
 */
const perCpu = (r) => (r ? ratio(r.rps, r.serverCpuShare + (r.dbCpuShare ?? 0)) : null);

/**
 * The figures of the report, in its order, with their targets (null: a reference figure).
 * `ok(v)` says whether v meets the target.
 * @type {Array<{ key: string, label: string, target: string|null, ok?: (v: number) => boolean, unit?: string }>}
 */
export const FIGURES = [
  { key: 'ceiling_rps', label: 'ceiling: bare node:http, req/s', target: null },
  { key: 'peer_introspection_rps', label: 'peer (oidc-provider 9) introspection, req/s', target: null },
  { key: 'peer_revocation_rps', label: 'peer (oidc-provider 9) revocation, req/s', target: null },
  { key: 'introspection_rps', label: 'tokenctl introspection, req/s', target: null },
  { key: 'introspection_p99_ms', label: 'tokenctl introspection p99, ms (50 conns)', target: '≤ 5', ok: (v) => v <= 5 },
  { key: 'introspection_ratio_to_ceiling', label: 'introspection / ceiling', target: '≥ 0.6', ok: (v) => v >= 0.6 },
  { key: 'introspection_ratio_to_peer', label: 'introspection / peer', target: '≥ 5', ok: (v) => v >= 5 },
  { key: 'refresh_rps', label: 'tokenctl refresh, req/s', target: null },
  { key: 'refresh_p99_ms', label: 'tokenctl refresh p99, ms (50 conns)', target: '≤ 15', ok: (v) => v <= 15 },
  { key: 'refresh_ratio_to_ceiling', label: 'refresh / ceiling', target: '≥ 0.15', ok: (v) => v >= 0.15 },
  { key: 'dpop_refresh_ratio', label: 'refresh with a DPoP proof / without', target: '≥ 0.7', ok: (v) => v >= 0.7 },
  { key: 'authorization_code_rps', label: 'tokenctl code exchange (fresh codes), req/s', target: null },
  { key: 'authorization_code_p99_ms', label: 'tokenctl code exchange p99, ms (50 conns)', target: null },
  { key: 'authorization_code_to_refresh_ratio', label: 'code exchange / refresh', target: null },
  { key: 'revocation_rps', label: 'tokenctl revocation (fresh tokens), req/s', target: null },
  { key: 'revocation_ratio_to_peer', label: 'revocation / peer', target: '≥ 1.5', ok: (v) => v >= 1.5 },
  { key: 'introspection_1m_vs_1k', label: 'introspection, 1M-token store / 1k', target: '≥ 0.9', ok: (v) => v >= 0.9 },
  { key: 'cli_introspect_ms', label: 'CLI `introspect --json`, ms', target: null },
  { key: 'cli_ratio_to_plain_script', label: 'CLI / plain better-sqlite3 script', target: '≤ 1.5', ok: (v) => v <= 1.5 },
  { key: 'bulk_revoke_100k_ms', label: 'bulk revocation of 100k tokens, ms', target: '≤ 1000', ok: (v) => v <= 1000 },
  { key: 'server_rss_mb', label: 'tokenctl server RSS under load, MB', target: '≤ 150', ok: (v) => v <= 150 },
  { key: 'pg_introspection_rps_1node', label: 'introspection, PostgreSQL store, 1 node, req/s', target: null },
  { key: 'pg_introspection_rps_2nodes', label: 'introspection, PostgreSQL store, 2 nodes, req/s', target: null },
  { key: 'pg_introspection_ratio_to_sqlite', label: 'introspection, PostgreSQL 1 node / SQLite', target: '≥ 0.5', ok: (v) => v >= 0.5 },
  { key: 'pg_revocation_rps', label: 'revocation (fresh tokens), PostgreSQL store, 1 node, req/s', target: null },
  { key: 'pg_revocation_ratio_to_peer', label: 'revocation, PostgreSQL 1 node / peer', target: '≥ 1.5', ok: (v) => v >= 1.5 },
  { key: 'pg_revocation_per_cpu_s', label: 'revocation, PostgreSQL 1 node, per CPU-s of node + its backends', target: null },
  { key: 'pg_revocation_per_cpu_ratio_to_peer', label: 'that / the peer\'s revocations per CPU-s', target: null },
  { key: 'pg_refresh_rps', label: 'refresh, PostgreSQL store, 1 node, req/s', target: null },
  { key: 'pg_refresh_ratio_to_sqlite', label: 'refresh, PostgreSQL 1 node / SQLite', target: '≥ 0.5', ok: (v) => v >= 0.5 },
  { key: 'pg_introspection_rps_3nodes', label: 'introspection, PostgreSQL store, 3 nodes, req/s', target: null },
  { key: 'pg_revocation_rps_3nodes', label: 'revocation, PostgreSQL store, 3 nodes, req/s', target: null },
  { key: 'pg_refresh_rps_3nodes', label: 'refresh, PostgreSQL store, 3 nodes, req/s', target: null },
  { key: 'pg_bulk_revoke_100k_ms', label: 'bulk revocation of 100k tokens, PostgreSQL, ms', target: '≤ 1000', ok: (v) => v <= 1000 },
  { key: 'pg_bulk_revoke_max_stall_ms', label: 'longest wait of a revocation during it, ms', target: '≤ 100', ok: (v) => v <= 100 },
  { key: 'metrics_cost_ratio', label: 'introspection, metrics on / off (serve --metrics-port)', target: '≥ 0.97', ok: (v) => v >= 0.97 },
  { key: 'login_round_trip_p50_ms', label: 'login round trip under load, p50, ms', target: null },
  { key: 'login_round_trip_p99_ms', label: 'login round trip under load, p99, ms', target: null },
  { key: 'login_background_rps', label: 'introspection beside the logins, req/s', target: null },
];

/**
 * @typedef {import('./measure.js').LoadResult} LoadResult
 * @typedef {{ n: number, runs: Record<string, LoadResult|undefined>,
 *   cli?: { node_ms: number, plain_ms: number, tokenctl_ms: number, tool: string },
 *   bulk?: { elapsed_ms: number, wall_ms: number, revoked: number },
 *   pgBulk?: { elapsed_ms: number, wall_ms: number, revoked: number, max_stall_ms: number, probes: number },
 *   login?: import('./measure.js').LoginResult }} Rep
 */

/**
 * @param {Rep[]} reps
 * @returns {Record<string, number|null>}
 */
export function figures(reps) {
  /** @param {(r: Rep) => number|null|undefined} f */
  const med = (f) => median(reps.map(f));
  const rps = (/** @type {Rep} */ r, /** @type {string} */ k) => r.runs[k]?.rps;
  return {
    ceiling_rps: med((r) => rps(r, 'ceiling.introspect')),
    peer_introspection_rps: med((r) => rps(r, 'peer.introspect')),
    peer_revocation_rps: med((r) => rps(r, 'peer.revoke')),
    introspection_rps: med((r) => rps(r, 'tokenctl.introspect')),
    introspection_p99_ms: med((r) => r.runs['tokenctl.introspect']?.latency.p99),
    introspection_ratio_to_ceiling: med((r) => ratio(rps(r, 'tokenctl.introspect'), rps(r, 'ceiling.introspect'))),
    introspection_ratio_to_peer: med((r) => ratio(rps(r, 'tokenctl.introspect'), rps(r, 'peer.introspect'))),
    refresh_rps: med((r) => rps(r, 'tokenctl.refresh')),
    refresh_p99_ms: med((r) => r.runs['tokenctl.refresh']?.latency.p99),
    refresh_ratio_to_ceiling: med((r) => ratio(rps(r, 'tokenctl.refresh'), rps(r, 'ceiling.introspect'))),
    dpop_refresh_ratio: med((r) => ratio(rps(r, 'tokenctl.refresh_dpop'), rps(r, 'tokenctl.refresh'))),
    revocation_rps: med((r) => rps(r, 'tokenctl.revoke')),
    revocation_ratio_to_peer: med((r) => ratio(rps(r, 'tokenctl.revoke'), rps(r, 'peer.revoke'))),
    introspection_1m_vs_1k: med((r) => ratio(rps(r, 'tokenctl.introspect_1m'), rps(r, 'tokenctl.introspect'))),
    cli_introspect_ms: med((r) => r.cli?.tokenctl_ms),
    cli_ratio_to_plain_script: med((r) => ratio(r.cli?.tokenctl_ms, r.cli?.plain_ms)),
    bulk_revoke_100k_ms: med((r) => r.bulk?.elapsed_ms),
    server_rss_mb: med((r) => {
      const rss = Object.entries(r.runs).filter(([k]) => k.startsWith('tokenctl.')).map(([, v]) => v?.serverRssMb ?? NaN);
      return rss.length ? Math.max(...rss) : null;
    }),
    pg_introspection_rps_1node: med((r) => rps(r, 'tokenctl.introspect_pg_1node')),
    pg_introspection_rps_2nodes: med((r) => rps(r, 'tokenctl.introspect_pg_2nodes')),
    pg_introspection_ratio_to_sqlite: med((r) => ratio(rps(r, 'tokenctl.introspect_pg_1node'), rps(r, 'tokenctl.introspect'))),
    pg_revocation_rps: med((r) => rps(r, 'tokenctl.revoke_pg')),
    pg_revocation_ratio_to_peer: med((r) => ratio(rps(r, 'tokenctl.revoke_pg'), rps(r, 'peer.revoke'))),
    pg_revocation_per_cpu_s: med((r) => perCpu(r.runs['tokenctl.revoke_pg'])),
    pg_revocation_per_cpu_ratio_to_peer: med((r) => ratio(perCpu(r.runs['tokenctl.revoke_pg']), perCpu(r.runs['peer.revoke']))),
    pg_introspection_rps_3nodes: med((r) => rps(r, 'tokenctl.introspect_pg_3nodes')),
    pg_revocation_rps_3nodes: med((r) => rps(r, 'tokenctl.revoke_pg_3nodes')),
    pg_refresh_rps_3nodes: med((r) => rps(r, 'tokenctl.refresh_pg_3nodes')),
    pg_refresh_rps: med((r) => rps(r, 'tokenctl.refresh_pg')),
    pg_refresh_ratio_to_sqlite: med((r) => ratio(rps(r, 'tokenctl.refresh_pg'), rps(r, 'tokenctl.refresh'))),
    pg_bulk_revoke_100k_ms: med((r) => r.pgBulk?.elapsed_ms),
    pg_bulk_revoke_max_stall_ms: med((r) => r.pgBulk?.max_stall_ms),
    metrics_cost_ratio: med((r) => ratio(rps(r, 'tokenctl.introspect_metrics'), rps(r, 'tokenctl.introspect'))),
    authorization_code_rps: med((r) => rps(r, 'tokenctl.authorization_code')),
    authorization_code_p99_ms: med((r) => r.runs['tokenctl.authorization_code']?.latency.p99),
    authorization_code_to_refresh_ratio: med((r) => ratio(rps(r, 'tokenctl.authorization_code'), rps(r, 'tokenctl.refresh'))),
    login_round_trip_p50_ms: med((r) => r.login?.p50_ms),
    login_round_trip_p99_ms: med((r) => r.login?.p99_ms),
    login_background_rps: med((r) => rps(r, 'tokenctl.login_background')),
  };
}

/**
 * Every figure of each repetition on its own (a median of one), so that their spread can be read
 * next to the median: on a shared machine that spread is the figure's noise.
 * @param {Rep[]} reps
 */
export function perRep(reps) {
  const each = reps.map((r) => figures([r]));
  return Object.fromEntries(FIGURES.map((f) => [f.key, each.map((x) => round(x[f.key] ?? null, 4))]));
}

/** Per-run details (medians across repetitions), for the second table and `meta.runs`. */
export function details(/** @type {Rep[]} */ reps) {
  const keys = [...new Set(reps.flatMap((r) => Object.keys(r.runs)))];
  return Object.fromEntries(
    keys.map((k) => {
      /** @param {(x: LoadResult) => number} f */
      const m = (f) => round(median(reps.map((r) => (r.runs[k] ? f(/** @type {LoadResult} */ (r.runs[k])) : null))), 3);
      return [k, {
        rps: m((x) => x.rps), rps_per_server_cpu_s: m((x) => x.rps / x.serverCpuShare), p50_ms: m((x) => x.latency.p50), p99_ms: m((x) => x.latency.p99),
        server_cpu_share: m((x) => x.serverCpuShare), load_cpu_share: m((x) => x.loadCpuShare),
        db_cpu_share: m((x) => x.dbCpuShare ?? NaN), db_background_cpu_share: m((x) => x.dbAuxCpuShare ?? NaN),
        rps_per_server_and_db_cpu_s: m((x) => perCpu(x) ?? NaN),
        server_rss_mb: m((x) => x.serverRssMb), non2xx: m((x) => x.non2xx + x.errors + x.timeouts),
      }];
    }),
  );
}

/** @param {number|null} v @param {number} digits */
export function round(v, digits) {
  if (v === null) return null;
  const f = 10 ** digits;
  return Math.round(v * f) / f;
}

/** @param {number|null} v */
function show(v) {
  if (v === null) return 'n/a';
  if (Math.abs(v) >= 100) return Math.round(v).toLocaleString('en-US');
  if (Math.abs(v) >= 10) return v.toFixed(1);
  return v.toFixed(2);
}

/** @param {string[][]} rows */
function table(rows) {
  const widths = /** @type {string[]} */ (rows[0]).map((_, i) => Math.max(...rows.map((r) => [...(r[i] ?? '')].length)));
  const line = (/** @type {string[]} */ r) => '│ ' + r.map((c, i) => c + ' '.repeat(/** @type {number} */ (widths[i]) - [...c].length)).join(' │ ') + ' │';
  const rule = (/** @type {string} */ l, /** @type {string} */ m, /** @type {string} */ r) => l + widths.map((w) => '─'.repeat(w + 2)).join(m) + r;
  return [rule('┌', '┬', '┐'), line(/** @type {string[]} */ (rows[0])), rule('├', '┼', '┤'), ...rows.slice(1).map(line), rule('└', '┴', '┘')].join('\n');
}

/** @param {Record<string, number|null>} figs @param {{ measuredOnly?: boolean }} [opt] measuredOnly: leave out figures not measured (`--only`) */
export function figuresTable(figs, opt = {}) {
  const rows = [['figure', 'key', 'value', 'target', '']];
  for (const f of FIGURES) {
    const v = figs[f.key] ?? null;
    if (v === null && opt.measuredOnly) continue;
    const mark = f.ok === undefined ? '' : v === null ? '–' : f.ok(v) ? '✓' : '✗';
    rows.push([f.label, f.key, show(v), f.target ?? '', mark]);
  }
  return table(rows);
}

/** @param {ReturnType<typeof details>} d */
export function detailsTable(d) {
  const rows = [['run (median of reps)', 'req/s', 'req per server CPU-s', 'p50 ms', 'p99 ms', 'server CPU', 'db CPU (+bg)', 'req per server+db CPU-s', 'loadgen CPU', 'server RSS MB', 'failed']];
  for (const [k, v] of Object.entries(d)) {
    const db = v.db_cpu_share === null ? '' : `${show(v.db_cpu_share)} (+${show(v.db_background_cpu_share)})`;
    const both = v.db_cpu_share === null ? '' : show(v.rps_per_server_and_db_cpu_s);
    rows.push([k, show(v.rps), show(v.rps_per_server_cpu_s), show(v.p50_ms), show(v.p99_ms), show(v.server_cpu_share), db, both, show(v.load_cpu_share), show(v.server_rss_mb), show(v.non2xx)]);
  }
  return table(rows);
}
