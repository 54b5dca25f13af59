import { Flags } from '@oclif/core';
import { BaseCommand } from '../cli/base-command.js';
import { parseDuration } from '../cli/duration.js';
import { settingFlags } from '../cli/engine-flags.js';
import { CliError, EXIT } from '../cli/errors.js';
import type { StatusReport } from '../cli/render/results.js';
import { renderStatus } from '../cli/render/status.js';
import type { MetricsStatus } from '../metrics/status-view.js';

export default class Status extends BaseCommand<typeof Status> {
  static override storeUse = 'read' as const;
  static override summary = 'Show the store: where it is, its schema version, and what it holds; or, with --url, a running server\'s metrics';
  static override description = `Counts clients, and tokens by type and state, and shows the oldest expired token not yet purged and the receivers of security events with what waits for them (a receiver whose oldest pending event is older than --event-lag-warning, serve's setting of the same name, or that has dead letters is pointed out; tokenctl receiver list shows why). Never shows a token or a secret.

With --url (the metrics listener of serve --metrics-port) it reads the server's Prometheus metrics instead of the store: requests a second and latency per endpoint, 401s by reason, 503s, tokens refreshed and revoked, reuse detections, store latency, errors, row-cache hits and pool. On a terminal it refreshes every --interval (a duration, 2s by default) until Ctrl-C; with --json, or when stdout is not a terminal, it prints the totals since the server started once.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --db /var/lib/tokenctl/tokens.db --json',
    { description: 'Watch a running server (serve --metrics-port 9464)', command: '<%= config.bin %> <%= command.id %> --url http://127.0.0.1:9464/metrics' },
  ];

  static override flags = {
    ...settingFlags('eventLagWarningMs'),
    url: Flags.string({ description: "A running server's metrics URL (serve --metrics-port): show its metrics, not the store", helpGroup: 'METRICS' }),
    // A duration like every other one (2s, 1m): a bare number is refused rather than read as seconds.
    interval: Flags.custom<number>({ helpValue: '<duration>', parse: async (input: string) => parseInterval(input) })({
      description: 'With --url on a terminal: time between refreshes, 1s to 1h',
      default: 2000,
      defaultHelp: async () => '2s',
      helpGroup: 'METRICS',
    }),
  };

  async run(): Promise<StatusReport | MetricsStatus> {
    if (this.flags.url !== undefined) return this.metrics(this.flags.url);
    const lag = this.flags['event-lag-warning'];
    const report = await (await this.engine(lag === undefined ? {} : { eventLagWarningMs: lag })).status();
    if (!this.jsonEnabled()) this.log(renderStatus(report, Date.now()));
    return report;
  }

  private async metrics(given: string): Promise<MetricsStatus> {
    const { metricsUrl, statusOnce, watchStatus } = await import('../metrics/status-watch.js');
    const { renderMetricsStatus } = await import('../cli/render/metrics-status.js');
    let url: string;
    try {
      url = metricsUrl(given);
    } catch {
      throw new CliError(`--url ${given} is not a URL`, EXIT.usage, 'usage', 'give the metrics listener, e.g. http://127.0.0.1:9464/metrics');
    }
    const failed = (error: unknown): never => {
      throw new CliError(error instanceof Error ? error.message : String(error), EXIT.failure, 'metrics_unavailable', 'start the server with serve --metrics-port PORT, and give that port');
    };
    if (this.jsonEnabled() || !process.stdout.isTTY) {
      const status = await statusOnce(url).catch(failed);
      if (!this.jsonEnabled()) this.log(renderMetricsStatus(status));
      return status;
    }
    const stop = new AbortController();
    let last: MetricsStatus | undefined;
    process.once('SIGINT', () => stop.abort());
    await watchStatus(url, this.flags.interval / 1000, (status) => this.log(`\x1b[H\x1b[2J${renderMetricsStatus((last = status))}`), stop.signal).catch(failed);
    return last!;
  }
}

/** `--interval`: a duration of at least a second (a scrape a second is already plenty) and at most an hour. */
function parseInterval(input: string): number {
  const ms = parseDuration(input, 3_600_000);
  if (ms < 1000) throw new CliError(`--interval ${input}: at least 1s`, EXIT.usage, 'usage');
  return ms;
}
