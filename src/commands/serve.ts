import { join } from 'node:path';
import { Flags } from '@oclif/core';
import { BaseCommand, defaultNode } from '../cli/base-command.js';
import { CliError, EXIT } from '../cli/errors.js';
import { settingFlags, settingsOf } from '../cli/engine-flags.js';
import { durationFlag, fromEnvironment } from '../cli/flags.js';
import { ENGINE_SETTINGS } from '../engine/settings.js';
import { serveLogStream } from '../cli/render/log-line.js';
import { DEFAULT_DRAIN_MS } from '../serve/drain.js';
import { ServeError } from '../serve/errors.js';
import { isLoopback } from '../serve/transport.js';
import type { ServeSettings } from '../serve/run.js';
import type { MetricsListenError } from '../metrics/listener.js';
import type { ServeObservability } from '../metrics/observability.js';
import type { OpenStoreOptions } from '../store/open-store.js';
import type { TokenStore } from '../store/store.js';

/** The engine's settings `serve` offers as flags, described by the engine (`engine/settings.ts`). */
const ENGINE_FLAGS = ['rotateRefreshTokens', 'refreshGraceMs', 'maxRefreshesPerMinute', 'accessTtlMs', 'refreshTtlMs', 'ssfPrivateNetwork', 'dpopNonceSecret', 'eventLagWarningMs'] as const;

export default class Serve extends BaseCommand<typeof Serve> {
  static override storeUse = 'create' as const;
  static override summary = 'Serve the OAuth endpoints (tokens, revocation, introspection, logins) over HTTPS, or plain HTTP on loopback';
  static override description = `Exposes the store to OAuth clients and resource servers:
  POST /oauth/token           tokens: grant_type=refresh_token, authorization_code or client_credentials
  POST /oauth/revocation      revoke a token (RFC 7009)
  POST /oauth/introspection   check a token (RFC 7662)
  GET  /.well-known/oauth-authorization-server   RFC 8414 metadata
  GET  /health/live           200 while the process answers (no store call): for a liveness probe
  GET  /health/ready          200 when the store answers a read and the node is not draining: for load balancers and readiness probes (/healthz is the same)
  GET  /oauth/authorize       the authorization code flow (with --login-url, --dev-login or --demo)
  /oauth/login-requests/…     the back channel of your login app (--login-url, docs/login.md)

Every flag can also be given in the environment, as TOKENCTL_ and its name in capitals with _ for - (TOKENCTL_DB_TIMEOUT=2s; TOKENCTL_ROTATE_REFRESH_TOKENS=true): the flag wins when both are given.

Prints one line "listening on <URL>" on stdout when ready. Request logs (never a token or secret) go to stderr: one readable line per request on a terminal, JSON lines otherwise (for log collectors). SIGTERM drains (see --drain) and stops gracefully; SIGINT stops gracefully without the drain.

Without a TLS flag it serves plain http:// on 127.0.0.1 (loopback only, with a warning); any other address needs --tls-cert/--tls-key or --tls-self-signed, or --insecure-http behind a TLS-terminating proxy. --demo creates a demo client and tokens, serves HTTPS with a development certificate, and prints curl commands to try every endpoint; on loopback it also registers the public client demo-app and answers its logins with the development page. It creates the store if there is none (as client create does).`;

  static override examples = [
    { description: 'Try it: a demo client, tokens and curl commands, over HTTPS with a development certificate', command: '<%= config.bin %> <%= command.id %> --demo' },
    { description: 'On every interface with a real certificate', command: '<%= config.bin %> <%= command.id %> --host 0.0.0.0 --port 443 --tls-cert cert.pem --tls-key key.pem --issuer https://auth.example.com' },
    { description: 'Rotate refresh tokens, tolerating a lost response for 10 seconds', command: '<%= config.bin %> <%= command.id %> --tls-self-signed --rotate-refresh-tokens --refresh-grace 10s' },
    { description: 'Your own login app answers the authorization code flow (docs/login.md)', command: '<%= config.bin %> <%= command.id %> --tls-self-signed --login-url https://login.example.com/tokenctl' },
    { description: 'A free port, quiet logs (scripts and benchmarks)', command: '<%= config.bin %> <%= command.id %> --port 0 --log-level warn' },
  ];

  static override enableJsonFlag = false;

  static override flags = fromEnvironment({
    host: Flags.string({ description: 'Address to listen on; anything but loopback needs TLS or --insecure-http', default: '127.0.0.1' }),
    port: Flags.integer({ char: 'p', description: 'Port to listen on; 0 picks a free one', default: 8443, min: 0, max: 65535 }),
    'tls-cert': Flags.string({ description: 'PEM certificate (chain) to serve HTTPS with', dependsOn: ['tls-key'], exclusive: ['tls-self-signed', 'insecure-http'], helpGroup: 'TLS', helpValue: '<file>' }),
    'tls-key': Flags.string({ description: 'PEM private key of --tls-cert', dependsOn: ['tls-cert'], helpGroup: 'TLS', helpValue: '<file>' }),
    'tls-self-signed': Flags.boolean({ description: 'HTTPS with a development certificate, made once and kept in the data directory (its path is printed)', exclusive: ['insecure-http'], helpGroup: 'TLS' }),
    'insecure-http': Flags.boolean({ description: 'Allow plain HTTP on a non-loopback address (only behind a TLS-terminating proxy)', helpGroup: 'TLS' }),
    issuer: Flags.string({ description: `${ENGINE_SETTINGS.issuer.summary} [default: the URL it listens on]`, env: 'TOKENCTL_ISSUER' }),
    node: Flags.string({ description: `${ENGINE_SETTINGS.node.summary} [default: the host name]`, env: 'TOKENCTL_NODE' }),
    ...settingFlags(...ENGINE_FLAGS),
    'login-url': Flags.string({ description: 'Your login app: GET /oauth/authorize sends the browser there with ?login_challenge=…, and the app answers over the login API (docs/login.md)', exclusive: ['dev-login'], helpGroup: 'LOGIN', helpValue: '<url>' }),
    'dev-login': Flags.boolean({ description: 'Answer logins with the built-in development page, which accepts any user name (on by default with --demo on loopback); never in production', helpGroup: 'LOGIN' }),
    demo: Flags.boolean({ description: 'Create (or re-key) the client demo-client, issue it a token pair and print curl commands for every endpoint; HTTPS with a development certificate unless a TLS flag says otherwise' }),
    'pool-size': Flags.integer({ description: 'PostgreSQL: connections per process (each worker has its own pool); 10 nodes at 8 fit a stock max_connections of 100 with room for operators (docs/scale-out.md)', default: 8, min: 1, max: 1000, helpGroup: 'STORE' }),
    'db-timeout': durationFlag({ description: 'PostgreSQL: the longest a request waits on the database before it answers 503 [default: 5s]', helpGroup: 'STORE' }),
    drain: durationFlag({ description: 'On SIGTERM: answer 503 on /health/ready at once but keep serving this long, so load balancers move away first; then stop accepting, finish requests in flight, exit 0 (0s: no drain) [default: 5s]' }),
    'max-connections': Flags.integer({ description: 'Open connections at once, per process; past it new ones are closed and idle keep-alive ones make room. Lowered to fit the open files limit (ulimit -n), which serve reads and says at start [default: 1000]', min: 1, max: 1_000_000 }),
    'trust-proxy': Flags.string({
      description: 'Proxies (addresses, CIDR ranges, or loopback, linklocal, uniquelocal) whose X-Forwarded-For names the client, for the brute-force budgets and the logs; repeatable or comma-separated [default: none: the peer is the client] (docs/operations.md)',
      multiple: true,
      delimiter: ',',
      helpValue: '<cidr>',
    }),
    workers: Flags.integer({ description: 'Processes serving the port (node:cluster), each with its own store connection; use the cores of a bigger machine', default: 1, min: 1, max: 64 }),
    'metrics-port': Flags.integer({ description: 'Serve Prometheus metrics at http://<metrics-host>:<port>/metrics, summed over all workers; 0 picks a free port (printed on stderr) [default: off]', min: 0, max: 65535, helpGroup: 'METRICS' }),
    'metrics-host': Flags.string({ description: 'Address of the metrics listener (keep it off the public network)', default: '127.0.0.1', helpGroup: 'METRICS' }),
    'metrics-client-label': Flags.boolean({ description: 'Count answers per authenticated client too (tokenctl_client_requests_total{client}), for the first --metrics-max-clients clients', helpGroup: 'METRICS' }),
    'metrics-max-clients': Flags.integer({ description: 'With --metrics-client-label: clients with a label of their own; later ones count as "other"', default: 100, min: 1, max: 10_000, helpGroup: 'METRICS' }),
    trace: Flags.boolean({ description: 'OpenTelemetry spans around the three endpoints and their store calls; needs an SDK loaded into the process (docs/observability.md)', helpGroup: 'METRICS' }),
    'log-level': Flags.string({ description: 'Request logs at info; warn or error keeps only problems', options: ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'], default: 'info' }),
  });

  /** Metrics and tracing when asked for: made before the store opens, which reports to it. */
  private observability?: ServeObservability;

  /** The store as the server uses it: timed and traced when metrics or tracing were asked for. */
  protected override async openStore(): Promise<TokenStore> {
    const store = await super.openStore();
    return this.observability?.local?.instrumentStore(store) ?? store;
  }

  protected override storeOptions(): OpenStoreOptions {
    // retryBudgetMs: a request's 2 s (the store's default), not the CLI's 30 s.
    const observer = this.observability?.local?.storeObserver;
    return { ...super.storeOptions(), poolSize: this.flags['pool-size'], statementTimeoutMs: this.flags['db-timeout'] ?? 5000, backgroundCheckpoints: true, retryBudgetMs: undefined, ...(observer && { observer }) };
  }

  async run(): Promise<void> {
    const f = this.flags;
    if (f['metrics-port'] !== undefined || f.trace) {
      const { ServeObservability } = await import('../metrics/observability.js');
      const metrics = f['metrics-port'] === undefined ? undefined : { host: f['metrics-host'], port: f['metrics-port'], clientLabel: f['metrics-client-label'], maxClients: f['metrics-max-clients'] };
      this.observability = new ServeObservability({ metrics, trace: f.trace }, f.workers);
    }
    // The HTTP server (fastify) is loaded only by this command.
    const { runServe } = await import('../serve/run.js');
    const out = { line: (text: string) => this.log(text), warn: (text: string) => this.warn(text), note: (text: string) => this.logToStderr(text) };
    try {
      await runServe(this.settings(), (options) => this.engine(options), out);
    } catch (error) {
      if (error instanceof ServeError || isMetricsListenError(error)) throw new CliError(error.message, error.kind === 'usage' ? EXIT.usage : EXIT.failure, error.code, error.hint);
      throw error;
    }
  }

  /**
   * Contract 5: the login app of --login-url, or the development page: asked for with --dev-login,
   * or by --demo on a loopback address (off loopback the demo needs --dev-login said explicitly).
   */
  private login(): { loginUrl: string; devLogin: boolean } {
    const f = this.flags;
    const loginUrl = f['login-url'] === undefined ? '' : checkLoginUrl(f['login-url']);
    return { loginUrl, devLogin: f['dev-login'] || (f.demo && loginUrl === '' && isLoopback(f.host)) };
  }

  /** Every flag of `serve` as the serve layer takes it: the engine's settings as one member, `engine`. */
  private settings(): ServeSettings {
    const f = this.flags;
    return {
      host: f.host,
      port: f.port,
      tlsCert: f['tls-cert'],
      tlsKey: f['tls-key'],
      tlsSelfSigned: f['tls-self-signed'],
      insecureHttp: f['insecure-http'],
      demo: f.demo,
      certDir: join(this.config.dataDir, 'tls'),
      engine: { issuer: f.issuer, node: f.node ?? defaultNode(), ...settingsOf(f, ENGINE_FLAGS), ...this.login() },
      devLoginAsked: f['dev-login'],
      logLevel: f['log-level'],
      logStream: serveLogStream(),
      actor: this.actor(),
      workers: f.workers,
      storeLocation: this.storeLocation(),
      storeOptions: this.storeOptions(),
      maxConnections: f['max-connections'],
      trustProxy: f['trust-proxy'],
      observability: this.observability,
      drainMs: f.drain ?? DEFAULT_DRAIN_MS,
    };
  }
}

/** `--login-url`: an absolute http(s) URL without a fragment, where the login challenge can be added. */
function checkLoginUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new CliError(`--login-url "${value}" is not an absolute URL`, EXIT.usage, 'invalid_login_url', 'give the address of your login app, e.g. --login-url https://login.example.com/tokenctl');
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.hash !== '') {
    throw new CliError(`--login-url "${value}" must be an http(s) URL without a #fragment`, EXIT.usage, 'invalid_login_url', 'e.g. --login-url https://login.example.com/tokenctl');
  }
  return value;
}

/** Duck-typed, so that the metrics code is loaded only when metrics are asked for. */
function isMetricsListenError(error: unknown): error is MetricsListenError {
  return error instanceof Error && error.name === 'MetricsListenError';
}
