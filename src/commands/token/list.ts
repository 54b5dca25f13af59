import { Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { CliError, EXIT } from '../../cli/errors.js';
import { bareFlag, limitFlag, stateFlag, tokenTypeFlag } from '../../cli/flags.js';
import { formatCount } from '../../cli/render/layout.js';
import { color } from '../../cli/render/style.js';
import type { TokenView } from '../../cli/render/results.js';
import { renderTokenList } from '../../cli/render/token.js';
import type { TokenState, TokenType } from '../../store/store.js';

const DEFAULT_LIMIT = 100;

/** `token list --json`. */
export interface TokenListResult {
  tokens: TokenView[];
  /** How many tokens match the filters, on every page. */
  total: number;
  /** Pass as --cursor for the next page; null on the last one. */
  next_cursor: string | null;
}

export default class TokenList extends BaseCommand<typeof TokenList> {
  static override storeUse = 'read' as const;
  static override summary = 'List tokens: jti, type, client, user, state and expiry, never the token';
  static override description = `Newest first, a page at a time (--limit, default ${DEFAULT_LIMIT}), with the total that match. Operators act on a token by its jti (revoke --jti, introspect --jti) without ever holding the token itself.

--bare prints the jtis of the page alone, one a line (for revoke --jti, introspect --jti).

The next page: pass the cursor the previous page ended with (--json: next_cursor; otherwise printed on stderr) as --cursor, with the same filters. Tokens issued meanwhile do not shift the pages.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> --user alice --state active',
    { description: 'Every refresh token of a client, as JSON, a page at a time', command: '<%= config.bin %> <%= command.id %> --client web-shop-1a2b3c4d --type refresh_token --limit 1000 --json' },
    { description: 'The next page', command: '<%= config.bin %> <%= command.id %> --client web-shop-1a2b3c4d --type refresh_token --limit 1000 --json --cursor "$NEXT"' },
  ];

  static override flags = {
    client: Flags.string({ char: 'c', description: 'Only tokens of this client' }),
    user: Flags.string({ char: 'u', description: 'Only tokens of this user' }),
    state: stateFlag,
    type: tokenTypeFlag,
    limit: limitFlag(`Show at most this many, newest first [default: ${DEFAULT_LIMIT}]`),
    cursor: Flags.string({ description: 'Continue after the page that printed this cursor', helpValue: '<cursor>' }),
    bare: bareFlag,
  };

  /** --bare: the page's jtis, one a line (the next cursor is not printed: use --json to page). */
  static override bare = (r: TokenListResult): string[] => r.tokens.map((t) => t.jti);

  async run(): Promise<TokenListResult> {
    const f = this.flags;
    const limit = f.limit ?? DEFAULT_LIMIT;
    const filter = {
      clientId: f.client,
      username: f.user,
      state: f.state as TokenState | undefined,
      type: f.type as TokenType | undefined,
    };
    const engine = await this.engine();
    const [tokens, total] = await Promise.all([engine.listTokens({ ...filter, limit, after: f.cursor === undefined ? undefined : decodeCursor(f.cursor) }), engine.countTokens(filter)]);
    const last = tokens[tokens.length - 1];
    const result: TokenListResult = { tokens, total, next_cursor: tokens.length === limit && last ? encodeCursor(last) : null };
    if (!this.jsonEnabled()) {
      this.log(renderTokenList(tokens, Date.now()));
      const shown = `${formatCount(tokens.length)} of ${formatCount(total)}`;
      this.logToStderr(color.dim(result.next_cursor ? `Showing ${shown}; next page: --cursor ${result.next_cursor}` : `Showing ${shown}${f.cursor ? ' (last page)' : ''}.`));
    }
    return result;
  }
}

/** A cursor names the last token of a page: its issue time and jti, base64url. */
function encodeCursor(t: TokenView): string {
  return Buffer.from(`${t.issued_at}:${t.jti}`).toString('base64url');
}

function decodeCursor(cursor: string): { issuedAt: number; jti: string } {
  const m = /^(\d{1,16}):([0-9a-f-]{36})$/i.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!m) throw new CliError(`--cursor ${cursor} is not a cursor that token list printed`, EXIT.usage, 'usage', 'pass next_cursor from the previous page as it was printed');
  return { issuedAt: Number(m[1]), jti: m[2]! };
}
