import { Counter, type Registry } from 'prom-client';

/**
 * Counters and histograms whose label children cost a few nanoseconds on the request path.
 * prom-client's own children validate and hash their labels on every call (over a microsecond
 * an answer); these add to plain numbers and hand them to prom-client at scrape time, which
 * still writes the exposition (and sums workers, through `get()`).
 */

/** A counter child: `inc()` adds to a number that the next scrape hands to prom-client. */
export interface BoundCounter {
  inc(by?: number): void;
}

/** A prom-client Counter with cheap children, flushed in its `collect()`. */
export class FastCounter<L extends string = string> {
  private readonly children: { labels: Partial<Record<L, string>>; pending: number }[] = [];
  private readonly counter: Counter<L>;

  constructor(options: { name: string; help: string; labelNames?: readonly L[]; registers: Registry[] }) {
    const children = this.children;
    this.labelNames = options.labelNames ?? [];
    this.counter = new Counter<L>({
      ...options,
      labelNames: this.labelNames,
      collect() {
        for (const child of children) {
          if (child.pending === 0) continue;
          this.inc(child.labels, child.pending);
          child.pending = 0;
        }
      },
    });
  }

  private readonly labelNames: readonly L[];

  /** The child for these label values, in `labelNames` order. Call once per combination and keep it. */
  labels(...values: string[]): BoundCounter {
    const labels = Object.fromEntries(this.labelNames.map((name, i) => [name, values[i]!])) as Partial<Record<L, string>>;
    const child = { labels, pending: 0 };
    this.children.push(child);
    this.counter.inc(labels, 0); // the series shows (as 0) from now on
    return { inc: (by = 1) => void (child.pending += by) };
  }
}

/** A histogram child. */
export interface BoundHistogram {
  observe(value: number): void;
}

interface HistogramSeries {
  labels: Record<string, string>;
  /** Per bucket (not cumulative); the last is +Inf. */
  counts: Float64Array;
  sum: number;
  count: number;
}

/**
 * A histogram registered in a prom-client registry as a metric object of its own (`get()` in
 * prom-client's shape, as its AggregatorRegistry registers aggregates): observing is a bucket
 * search over a few bounds and three additions.
 */
export class FastHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly name: string;
  readonly help: string;
  private readonly bounds: number[];
  private readonly labelNames: readonly string[];
  private readonly series: HistogramSeries[] = [];

  constructor(options: { name: string; help: string; labelNames?: readonly string[]; buckets: number[]; registers: Registry[] }) {
    this.name = options.name;
    this.help = options.help;
    this.bounds = [...options.buckets].sort((a, b) => a - b);
    this.labelNames = options.labelNames ?? [];
    for (const registry of options.registers) registry.registerMetric(this as never);
  }

  /** The child for these label values, in `labelNames` order. Call once per combination and keep it. */
  labels(...values: string[]): BoundHistogram {
    const series: HistogramSeries = {
      labels: Object.fromEntries(this.labelNames.map((name, i) => [name, values[i]!])),
      counts: new Float64Array(this.bounds.length + 1),
      sum: 0,
      count: 0,
    };
    this.series.push(series);
    const bounds = this.bounds;
    const last = bounds.length;
    return {
      observe(value) {
        let i = 0;
        while (i < last && value > bounds[i]!) i++;
        series.counts[i]!++;
        series.sum += value;
        series.count++;
      },
    };
  }

  /** The series in prom-client's shape: cumulative `_bucket`s by `le`, then `_sum` and `_count`. */
  get(): { name: string; help: string; type: string; aggregator: string; values: { labels: Record<string, string | number>; value: number; metricName: string }[] } {
    const values: { labels: Record<string, string | number>; value: number; metricName: string }[] = [];
    for (const s of this.series) {
      let cumulative = 0;
      this.bounds.forEach((le, i) => {
        cumulative += s.counts[i]!;
        values.push({ labels: { ...s.labels, le }, value: cumulative, metricName: `${this.name}_bucket` });
      });
      values.push({ labels: { ...s.labels, le: '+Inf' }, value: s.count, metricName: `${this.name}_bucket` });
      values.push({ labels: s.labels, value: s.sum, metricName: `${this.name}_sum` });
      values.push({ labels: s.labels, value: s.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}
