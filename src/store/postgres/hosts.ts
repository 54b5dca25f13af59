import pg from 'pg';

/**
 * A store URL naming several hosts, as libpq's do (`postgres://h1:5432,h2:5432/db?target_session_attrs=read-write`,
 * PostgreSQL docs 34.1.1.3 and 34.1.2): node-postgres reads one host only, so the pool's
 * connections are made by {@link writableHostClient}, which connects to the host that accepts
 * writes now. A primary with a standby fails over without a node restart: when the primary dies
 * and the standby is promoted, the next connection finds it.
 */
export interface HostList {
  /** `host:port` of each host, in the order given (the order they are tried). */
  readonly hosts: readonly { host: string; port: number }[];
  /** The URL with only the first host and without target_session_attrs, which pg can read. */
  readonly firstUrl: string;
}

/** libpq's target_session_attrs values that mean "a host that accepts writes". */
const WRITABLE_ATTRS = new Set(['read-write', 'primary']);

const AUTHORITY = /^(postgres(?:ql)?:\/\/)([^@/?#]*@)?([^/?#]*)(.*)$/i;

/** One host of the list, `name`, `name:port`, `[v6]` or `[v6]:port`. */
function hostOf(entry: string): { host: string; port: number } {
  const match = /^(\[[^\]]*\]|[^:]*)(?::(\d+))?$/.exec(entry);
  if (match === null || match[1] === '') throw new Error(`invalid host "${entry}" in the PostgreSQL store URL`);
  const host = match[1]!.startsWith('[') ? match[1]!.slice(1, -1) : match[1]!;
  return { host: decodeURIComponent(host), port: match[2] === undefined ? 5432 : Number(match[2]) };
}

/**
 * The hosts of a store URL, when it names several or asks for a writable host; undefined for
 * the plain one-host URL that pg reads itself. Several hosts without `target_session_attrs=
 * read-write` (or `primary`) are refused: libpq's default, the first host that answers, would
 * connect the store to a standby that refuses every write.
 */
export function hostListOf(url: string): HostList | undefined {
  const match = AUTHORITY.exec(url);
  if (match === null) return undefined;
  const [, scheme, userinfo = '', authority = '', rest = ''] = match;
  const [path, query = ''] = splitQuery(rest);
  const params = new URLSearchParams(query);
  const attrs = params.get('target_session_attrs');
  const entries = authority.split(',');
  if (entries.length === 1 && attrs === null) return undefined;
  if (attrs === null || !WRITABLE_ATTRS.has(attrs)) {
    const given = attrs === null ? 'no target_session_attrs' : `target_session_attrs=${attrs}`;
    throw new Error(`a PostgreSQL store URL with several hosts needs ?target_session_attrs=read-write (the store writes), not ${given}`);
  }
  params.delete('target_session_attrs');
  const hosts = entries.map(hostOf);
  const left = params.toString();
  const first = hosts[0]!;
  const firstHost = first.host.includes(':') ? `[${first.host}]` : encodeURIComponent(first.host);
  return { hosts, firstUrl: `${scheme}${userinfo}${firstHost}:${first.port}${path}${left === '' ? '' : `?${left}`}` };
}

function splitQuery(rest: string): [string, string | undefined] {
  const hash = rest.indexOf('#');
  const body = hash === -1 ? rest : rest.slice(0, hash);
  const q = body.indexOf('?');
  return q === -1 ? [body, undefined] : [body.slice(0, q), body.slice(q + 1)];
}

/** Answered by a host that accepts writes: not a standby, not read-only by default (libpq asks the same). */
const WRITABLE_CHECK = "SELECT NOT pg_is_in_recovery() AND current_setting('transaction_read_only') = 'off' AS writable";

/** What the pool's connections know of the hosts: which one took writes last, and a search under way. */
class HostSearch {
  /** Index of the host whose last connection was writable, while nothing has failed on it since; none at first. */
  private current: number | undefined;
  private searching: Promise<number> | undefined;

  constructor(
    private readonly list: HostList,
    private readonly config: pg.ClientConfig,
  ) {}

  /** The host to connect to: the last writable one, else the first writable found by asking every host at once. */
  async writable(): Promise<{ host: string; port: number }> {
    const index = this.current ?? (await (this.searching ??= this.search().finally(() => (this.searching = undefined))));
    return this.list.hosts[index]!;
  }

  /** A connection to `host` failed or found it read-only: search again before the next one. */
  forget(host: string, port: number): void {
    const known = this.current === undefined ? undefined : this.list.hosts[this.current];
    if (known?.host === host && known.port === port) this.current = undefined;
  }

  /** Each host once, at once, over a connection of its own; the first of the list that is writable wins. */
  private async search(): Promise<number> {
    const answers = await Promise.all(this.list.hosts.map((h) => probe(this.config, h)));
    const index = answers.findIndex((a) => a === 'writable');
    if (index === -1) {
      const why = this.list.hosts.map((h, i) => `${h.host}:${h.port} ${answers[i]}`).join(', ');
      throw Object.assign(new Error(`no host accepts writes (${why})`), { code: '08001' });
    }
    this.current = index;
    return index;
  }
}

/** How one host answered a probe: 'writable', 'read-only', or why it did not answer. */
async function probe(config: pg.ClientConfig, target: { host: string; port: number }): Promise<string> {
  const client = new pg.Client(config);
  // The URL's host would win over a `host` option: pg connects to these two fields (client.js _connect).
  client.host = target.host;
  client.port = target.port;
  client.on('error', () => undefined);
  try {
    await client.connect();
    const { rows } = await client.query<{ writable: boolean }>(WRITABLE_CHECK);
    return rows[0]?.writable === true ? 'writable' : 'read-only';
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === 'string' ? code : error instanceof Error ? error.message : String(error);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * The pool's connection class for a {@link HostList} (pg.Pool's `Client` option): each new
 * connection goes to the host that took writes last, and checks on itself that the host still
 * does (one round trip per connection, as libpq's read-write check). A host that refuses, or
 * answers read-only, fails that connection (a pg client connects once) and sends the next one
 * searching every host: in a failover, one request per pool more answers 503. Pooled
 * connections to a host that went away or turned read-only fail their statement and are
 * destroyed by the pool (database.ts releases a failed connection), never reused.
 */
export function writableHostClient(list: HostList, config: pg.ClientConfig): typeof pg.Client {
  const hosts = new HostSearch(list, { ...config, connectionString: list.firstUrl });
  return class WritableHostClient extends pg.Client {
    override connect(): Promise<pg.Client>;
    override connect(callback: ((err: Error) => void) | ((err: null, c: pg.Client) => void)): void;
    override connect(callback?: ((err: Error) => void) | ((err: null, c: pg.Client) => void)): Promise<pg.Client> | void {
      const connected = this.connectWritable().then(() => this);
      if (callback === undefined) return connected;
      const done = callback as (err: Error | null, c?: pg.Client) => void;
      connected.then((c) => done(null, c), (error: Error) => done(error));
    }

    private async connectWritable(): Promise<void> {
      const target = await hosts.writable();
      // pg connects to these two fields (client.js _connect); the rest of the URL is the same for every host.
      this.host = target.host;
      this.port = target.port;
      try {
        await super.connect();
      } catch (error) {
        hosts.forget(target.host, target.port);
        throw error;
      }
      const { rows } = await this.query<{ writable: boolean }>(WRITABLE_CHECK).catch(async (error: unknown) => {
        hosts.forget(target.host, target.port);
        await this.end().catch(() => undefined);
        throw error;
      });
      if (rows[0]?.writable !== true) {
        hosts.forget(target.host, target.port);
        await this.end().catch(() => undefined);
        throw Object.assign(new Error(`${target.host}:${target.port} does not accept writes now (a standby, or read-only)`), { code: '08001' });
      }
    }
  };
}
