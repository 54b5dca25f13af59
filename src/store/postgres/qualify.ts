/*
 * Schema-qualified statements, so that a store in `?schema=NAME` needs no search_path: a
 * search_path set per connection (a startup parameter or a session SET) is session state, which
 * a pooler in transaction mode (PgBouncer) refuses or hands to the next client. The statements
 * are written with bare table names; the layer that runs them (database.ts) qualifies them here,
 * once per statement text.
 */

/**
 * The tables a store owns (migrations.ts creates them), and its set-returning functions, read
 * like tables (`FROM f(…)`): the only names ever qualified.
 */
export const STORE_TABLES: readonly string[] = [
  'tokens', 'clients', 'audit', 'grants', 'migrations', 'tokenctl_meta', 'receivers', 'receiver_leases', 'security_events', 'event_deliveries', 'signing_keys',
  'authorizations', 'find_clients_and_tokens',
];

/** Words after which a name is a table (DML): `FROM t`, `JOIN t`, `INSERT INTO t`, `UPDATE t`, `DELETE ... USING t`, `LOCK TABLE t`. */
const TABLE_BEFORE = new Set(['from', 'join', 'into', 'update', 'using', 'table', 'only']);

/** Words that end a FROM list, so that a comma after them separates something else. */
const FROM_LIST_END = new Set([
  'where', 'group', 'having', 'window', 'order', 'limit', 'offset', 'fetch', 'for', 'union', 'intersect', 'except',
  'returning', 'set', 'on', 'values', 'select', 'do',
]);

interface Token {
  /** Lower-cased text of an unquoted word, or the punctuation character; '' for literals and quoted names. */
  word: string;
  start: number;
  end: number;
}

/**
 * The words and punctuation of `sql`, skipping what is never a table reference: string
 * literals ('…', E'…', $tag$…$tag$), quoted identifiers ("grantId"), comments and parameters.
 */
function tokenize(sql: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  const n = sql.length;
  while (i < n) {
    const c = sql[i]!;
    const start = i;
    if (/\s/.test(c)) {
      i++;
    } else if (c === '-' && sql[i + 1] === '-') {
      while (i < n && sql[i] !== '\n') i++;
    } else if (c === '/' && sql[i + 1] === '*') {
      const close = sql.indexOf('*/', i + 2);
      i = close === -1 ? n : close + 2;
    } else if (c === "'" || c === '"') {
      // A doubled quote inside stays inside; E'…' strings also escape with a backslash.
      const escapes = c === "'" && /[eE]/.test(sql[i - 1] ?? '') && !/[A-Za-z0-9_$]/.test(sql[i - 2] ?? '');
      i++;
      while (i < n) {
        if (escapes && sql[i] === '\\') i += 2;
        else if (sql[i] === c && sql[i + 1] === c) i += 2;
        else if (sql[i] === c) break;
        else i++;
      }
      i++;
      tokens.push({ word: '', start, end: i });
    } else if (c === '$') {
      const tag = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(sql.slice(i));
      if (tag) {
        const close = sql.indexOf(tag[0], i + tag[0].length);
        i = close === -1 ? n : close + tag[0].length;
        tokens.push({ word: '', start, end: i });
      } else {
        i++;
        while (i < n && /[0-9]/.test(sql[i]!)) i++; // $1: a parameter
        tokens.push({ word: '', start, end: i });
      }
    } else if (/[A-Za-z_]/.test(c)) {
      while (i < n && /[A-Za-z0-9_$]/.test(sql[i]!)) i++;
      tokens.push({ word: sql.slice(start, i).toLowerCase(), start, end: i });
    } else if (/[0-9]/.test(c)) {
      while (i < n && /[0-9.eE]/.test(sql[i]!)) i++;
      tokens.push({ word: '', start, end: i });
    } else {
      i++;
      tokens.push({ word: c, start, end: i });
    }
  }
  return tokens;
}

/** Names defined by the statement itself as common table expressions (`WITH grants AS (…)`): never qualified. */
function cteNames(tokens: Token[]): Set<string> {
  const names = new Set<string>();
  tokens.forEach((t, k) => {
    let next = k + 1;
    if (tokens[next]?.word === '(') {
      // name (col, …) AS (…)
      let depth = 0;
      for (; next < tokens.length; next++) {
        if (tokens[next]!.word === '(') depth++;
        if (tokens[next]!.word === ')' && --depth === 0) break;
      }
      next++;
    }
    if (tokens[next]?.word !== 'as') return;
    next++;
    if (tokens[next]?.word === 'not') next++;
    if (tokens[next]?.word === 'materialized') next++;
    if (tokens[next]?.word === '(' && (tokens[k - 1]?.word === 'with' || tokens[k - 1]?.word === ',' || tokens[k - 1]?.word === 'recursive')) {
      names.add(t.word);
    }
  });
  return names;
}

/**
 * `sql` with every reference to one of `tables` in a table position (after FROM, JOIN, INTO,
 * UPDATE, USING, TABLE, ONLY, or a comma of a FROM list) written as `"schema".name`. Everything
 * else is left as it was: column names (even `tokens.jti`, which still names the qualified
 * table), aliases, quoted names, literals, comments, and names already qualified.
 */
export function qualifyTables(sql: string, schema: string, tables: readonly string[] = STORE_TABLES): string {
  const tokens = tokenize(sql);
  const ctes = cteNames(tokens);
  const prefix = `"${schema.replace(/"/g, '""')}".`;
  // Per parenthesis depth: whether a comma there separates the items of a FROM list.
  const inFromList: boolean[] = [false];
  const positions: number[] = [];
  tokens.forEach((t, k) => {
    const prev = tokens[k - 1]?.word;
    const depth = inFromList.length - 1;
    if (t.word === '(') inFromList.push(false);
    else if (t.word === ')') {
      if (inFromList.length > 1) inFromList.pop();
    }
    else if (t.word === ';') inFromList.splice(0, inFromList.length, false);
    else if (t.word === 'from' || t.word === 'join' || t.word === 'using') inFromList[depth] = true;
    else if (FROM_LIST_END.has(t.word)) inFromList[depth] = false;
    if (!tables.includes(t.word) || ctes.has(t.word)) return;
    if (prev === '.' || tokens[k + 1]?.word === '.') return; // already qualified, or a column's qualifier
    const afterComma = prev === ',' && inFromList[depth] === true;
    if ((prev !== undefined && TABLE_BEFORE.has(prev)) || afterComma) positions.push(t.start);
  });
  let out = sql;
  for (const at of positions.reverse()) out = out.slice(0, at) + prefix + out.slice(at);
  return out;
}

/**
 * {@link qualifyTables} for one schema, remembering each statement's result: the store runs a
 * few dozen distinct texts, so after the first call each costs one map lookup.
 */
export class Qualifier {
  private readonly cache = new Map<string, string>();

  constructor(private readonly schema: string) {}

  qualify(sql: string): string {
    let qualified = this.cache.get(sql);
    if (qualified === undefined) {
      qualified = qualifyTables(sql, this.schema);
      // Statements are constants or built from a few filter shapes; a bound keeps a bug from leaking memory.
      if (this.cache.size >= 1_000) this.cache.clear();
      this.cache.set(sql, qualified);
    }
    return qualified;
  }
}
