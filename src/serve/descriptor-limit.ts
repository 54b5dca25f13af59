import { readdirSync, readFileSync } from 'node:fs';

/** The default of `--max-connections` when the descriptor limit leaves room for it. */
export const DEFAULT_MAX_CONNECTIONS = 1000;

/**
 * Descriptors kept back from connections for what else a serve process opens: the store (SQLite's
 * file, WAL and shared memory, or a PostgreSQL pool), push deliveries, the metrics listener, DNS
 * and TLS files, a worker's IPC channel.
 */
const BASE_RESERVE = 64;

/** What the process may open (RLIMIT_NOFILE) and has open, as Linux tells it; undefined elsewhere. */
export interface Descriptors {
  /** The soft limit, which `open` and `accept` fail past (EMFILE); Infinity when unlimited. */
  limit: number;
  /** Descriptors open now. */
  open: number;
}

/**
 * RLIMIT_NOFILE from /proc/self/limits (Node has no getrlimit) and the count of /proc/self/fd;
 * undefined where there is no /proc (macOS, Windows), and then nothing is sized.
 */
export function readDescriptors(readLimits = () => readFileSync('/proc/self/limits', 'utf8'), countOpen = () => readdirSync('/proc/self/fd').length): Descriptors | undefined {
  try {
    const line = /^Max open files\s+(\S+)\s+(\S+)/m.exec(readLimits());
    if (!line) return undefined;
    const limit = line[1] === 'unlimited' ? Infinity : Number(line[1]);
    if (!Number.isFinite(limit) && limit !== Infinity) return undefined;
    return { limit, open: countOpen() };
  } catch {
    return undefined;
  }
}

/** The connection cap a serve process runs with, and what to tell the operator at start. */
export interface ConnectionCap {
  maxConnections: number;
  /** One line for stderr: the cap and where it comes from (none when no limit is known). */
  note?: string;
  /** When the cap asked for does not fit the limit and was lowered. */
  warning?: string;
}

/**
 * `--max-connections` sized from the descriptor limit: each connection holds a descriptor, and a
 * process past its limit fails every `accept` and every file it opens (EMFILE), so clients get
 * resets and the store cannot open its WAL. The cap leaves the reserve (plus the PostgreSQL pool)
 * free; a cap asked for above that is lowered, with a warning saying how to raise the limit.
 */
export function connectionCap(requested: number | undefined, descriptors: Descriptors | undefined, poolSize = 0): ConnectionCap {
  const wanted = requested ?? DEFAULT_MAX_CONNECTIONS;
  if (descriptors === undefined || descriptors.limit === Infinity) return { maxConnections: wanted };
  const reserve = BASE_RESERVE + poolSize + descriptors.open;
  const room = Math.max(1, descriptors.limit - reserve);
  const maxConnections = Math.min(wanted, room);
  const note = `max connections: ${maxConnections} per process (open files limit ${descriptors.limit}, ${reserve} kept for the store and the rest)`;
  if (maxConnections >= wanted) return { maxConnections, note };
  const raise = `raise it (ulimit -n ${wanted + reserve}, or LimitNOFILE= in a systemd unit)`;
  return requested === undefined
    ? { maxConnections, note: `${note}; the default ${wanted} needs a higher limit: ${raise}` }
    : { maxConnections, note, warning: `--max-connections ${requested} does not fit the open files limit ${descriptors.limit}: lowered to ${maxConnections}; ${raise}` };
}
