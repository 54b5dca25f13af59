/**
 * Reading a Prometheus text-format scrape (what `GET /metrics` answers): for `tokenctl status
 * --url`, and tests. Samples and the `# TYPE` of each family; comments and timestamps skipped.
 */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Scrape {
  samples: Sample[];
  /** Metric family name → its type (counter, gauge, histogram, summary, untyped). */
  types: Map<string, string>;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parseScrape(text: string): Scrape {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line.startsWith('# TYPE ')) {
      const [name, type] = line.slice(7).split(' ');
      if (name && type) types.set(name, type);
      continue;
    }
    if (line === '' || line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(LABEL)) labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return { samples, types };
}

/** The sum of the samples named `name` whose labels include every pair of `where`. */
export function sum(scrape: Scrape, name: string, where: Record<string, string> = {}): number {
  let total = 0;
  for (const s of scrape.samples) {
    if (s.name === name && Object.entries(where).every(([k, v]) => s.labels[k] === v)) total += s.value;
  }
  return total;
}

/**
 * The `q` quantile (0–1) of a histogram, from its cumulative `_bucket` samples summed over the
 * other labels (as PromQL's histogram_quantile, linear within a bucket); undefined when empty.
 */
export function quantile(scrape: Scrape, histogram: string, q: number, where: Record<string, string> = {}): number | undefined {
  const buckets = new Map<number, number>();
  for (const s of scrape.samples) {
    if (s.name !== `${histogram}_bucket` || !Object.entries(where).every(([k, v]) => s.labels[k] === v)) continue;
    const le = s.labels.le === '+Inf' ? Infinity : Number(s.labels.le);
    buckets.set(le, (buckets.get(le) ?? 0) + s.value);
  }
  return quantileOf([...buckets].sort((a, b) => a[0] - b[0]), q);
}

/** histogram_quantile over cumulative [upper bound, count] pairs, sorted by bound. */
export function quantileOf(buckets: [number, number][], q: number): number | undefined {
  const total = buckets.at(-1)?.[1] ?? 0;
  if (total === 0) return undefined;
  const rank = q * total;
  let lower = 0;
  let below = 0;
  for (const [le, count] of buckets) {
    if (count >= rank) {
      if (le === Infinity) return lower;
      return lower + ((le - lower) * (rank - below)) / Math.max(count - below, 1e-9);
    }
    lower = le;
    below = count;
  }
  return lower;
}
