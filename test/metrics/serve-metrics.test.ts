import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/engine.js';
import type { TokenResponse } from '../../src/engine/results.js';
import { parseScrape, sum, type Scrape } from '../../src/metrics/scrape.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import type { TokenStore } from '../../src/store/store.js';
import { ROOT, startTokenctl, tempStore, tokenctl, type RunningTokenctl, type TempStore } from '../helpers/cli.js';
import { dropSchema, PG_URL, testSchemaName } from '../helpers/pg.js';

/**
 * `tokenctl serve --metrics-port 0` as a real process (needs `npm run build`), alone and with
 * `--workers 2`: a known load (N introspections, M refreshes, K revocations, F failed client
 * authentications), each request on a new connection so that both workers serve some, then one
 * scrape of the metrics listener must count exactly that. The scrape also carries every metric
 * that docs/grafana-dashboard.json queries, and `tokenctl status --url --json` reads it.
 */
const N = 40;
const M = 8;
const K = 6;
const F = 5;

function post(url: string, path: string, form: Record<string, string>): Promise<number> {
  const body = new URLSearchParams(form).toString();
  return new Promise((resolve, reject) => {
    const req = request(url + path, { method: 'POST', agent: false, headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(body) } }, (res) => {
      res.resume().on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Metric families a dashboard query names (histogram series names folded into their family). */
function dashboardMetrics(): string[] {
  const dashboard = JSON.parse(readFileSync(join(ROOT, 'docs/grafana-dashboard.json'), 'utf8')) as { panels: { targets?: { expr: string }[] }[]; templating: { list: { definition?: string }[] } };
  const exprs = [...dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr)), ...dashboard.templating.list.map((v) => v.definition ?? '')];
  const names = new Set<string>();
  for (const expr of exprs) for (const m of expr.matchAll(/\b((?:tokenctl|process|nodejs)_[a-z0-9_]+)\b/g)) names.add(m[1]!.replace(/_(bucket|sum|count)$/, ''));
  return [...names].sort();
}

describe.each([
  { workers: 1, pg: false, label: 'one process, SQLite' },
  { workers: 2, pg: false, label: '--workers 2, SQLite' },
  { workers: 2, pg: true, label: '--workers 2, PostgreSQL' },
])('serve --metrics-port under a known load ($label)', ({ workers, pg }) => {
  if (pg && PG_URL === undefined) {
    it.skip('needs TOKENCTL_TEST_PG', () => undefined);
    return;
  }
  const schema = testSchemaName();
  let store: TempStore;
  let location: string;
  let server: RunningTokenctl;
  let url: string;
  let metricsUrl: string;
  let secret: string;
  const pairs: TokenResponse[] = [];

  beforeAll(async () => {
    store = tempStore();
    location = pg ? `${PG_URL!}${PG_URL!.includes('?') ? '&' : '?'}schema=${schema}` : store.db;
    const opened: TokenStore = pg ? await PostgresStore.open(PG_URL!, { schema, poolSize: 2 }) : await SqliteStore.open(store.db);
    const engine = new Engine({ store: opened });
    secret = (await engine.createClient({ id: 'rs', name: 'rs', scope: 'read', orgId: 'org', audience: 'api' }, 'test')).client_secret!;
    for (let i = 0; i < K + 1; i++) pairs.push(await engine.issue({ clientId: 'rs', username: `user-${i}`, scope: 'read' }));
    await opened.close();
    server = startTokenctl(['serve', '--db', location, '--pool-size', '2', '--port', '0', '--metrics-port', '0', '--metrics-client-label', '--workers', String(workers), '--log-level', 'warn']);
    metricsUrl = (await server.waitFor(/metrics on (http:\/\/\S+)/, 30_000))[1]!;
    url = (await server.waitFor(/listening on (http:\/\/\S+)/, 30_000))[1]!;
  }, 60_000);
  afterAll(async () => {
    expect(await server?.stop()).toBe(0);
    store?.cleanup();
    if (pg) await dropSchema(PG_URL!, schema);
  });

  let scrape: Scrape;
  it('counts every request it was sent, by endpoint, status, outcome and reason', async () => {
    const auth = { client_id: 'rs', client_secret: secret };
    const refresh = pairs[K]!.refresh_token!;
    const statuses: number[] = [];
    for (let i = 0; i < N; i++) statuses.push(await post(url, '/oauth/introspection', { ...auth, token: pairs[i % (K + 1)]!.access_token }));
    for (let i = 0; i < M; i++) statuses.push(await post(url, '/oauth/token', { ...auth, grant_type: 'refresh_token', refresh_token: refresh }));
    for (let i = 0; i < K; i++) statuses.push(await post(url, '/oauth/revocation', { ...auth, token: pairs[i]!.access_token }));
    for (let i = 0; i < F; i++) statuses.push(await post(url, '/oauth/introspection', { client_id: 'rs', client_secret: 'wrong', token: pairs[K]!.access_token }));
    expect(statuses.filter((s) => s === 200)).toHaveLength(N + M + K);
    expect(statuses.filter((s) => s === 401)).toHaveLength(F);

    const res = await fetch(metricsUrl);
    expect(res.status).toBe(200);
    scrape = parseScrape(await res.text());
    expect(sum(scrape, 'tokenctl_server_processes')).toBe(workers);
    // The lowest of the workers' readiness (prom-client's 'min'), not their sum.
    expect(sum(scrape, 'tokenctl_ready')).toBe(1);
    expect(sum(scrape, 'tokenctl_http_requests_total', { endpoint: 'introspection', status: '200' })).toBe(N);
    expect(sum(scrape, 'tokenctl_http_requests_total', { endpoint: 'introspection', status: '200', outcome: 'active' })).toBe(N);
    expect(sum(scrape, 'tokenctl_http_requests_total', { endpoint: 'token', status: '200', outcome: 'refreshed' })).toBe(M);
    expect(sum(scrape, 'tokenctl_http_requests_total', { endpoint: 'revocation', status: '200', outcome: 'revoked' })).toBe(K);
    expect(sum(scrape, 'tokenctl_http_requests_total', { endpoint: 'introspection', status: '401', reason: 'bad_secret' })).toBe(F);
    expect(sum(scrape, 'tokenctl_http_requests_total')).toBe(N + M + K + F);
    expect(sum(scrape, 'tokenctl_http_request_duration_seconds_count')).toBe(N + M + K + F);
    expect(sum(scrape, 'tokenctl_tokens_refreshed_total')).toBe(M);
    expect(sum(scrape, 'tokenctl_revocations_total', { kind: 'single' })).toBe(K);
    expect(sum(scrape, 'tokenctl_client_auth_failures_total', { reason: 'bad_secret' })).toBe(F);
    expect(sum(scrape, 'tokenctl_client_requests_total', { client: 'rs' })).toBe(N + M + K);
    expect(sum(scrape, 'tokenctl_store_operation_duration_seconds_count')).toBeGreaterThan(0);
    // Nothing that identifies a token: no sample carries a token or its prefix.
    for (const s of scrape.samples) expect(Object.values(s.labels).join(' ')).not.toMatch(/tc[ar]_/);
  });

  it('carries every metric the Grafana dashboard queries', () => {
    const used = dashboardMetrics();
    expect(used.length).toBeGreaterThan(15);
    expect(used.filter((name) => !scrape.types.has(name))).toEqual([]);
  });

  it('is what tokenctl status --url --json reads', async () => {
    const status = await tokenctl(['status', '--url', metricsUrl, '--json']);
    expect(status.code).toBe(0);
    const shown = status.json<{ endpoints: Record<string, { requests: number }>; unauthorized: Record<string, number>; tokens: { refreshed: number } }>();
    expect(shown.endpoints.introspection!.requests).toBeGreaterThanOrEqual(N + F);
    expect(shown.unauthorized.bad_secret).toBe(F);
    expect(shown.tokens.refreshed).toBe(M);
  });
});
