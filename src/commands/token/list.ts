import { Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { limitFlag, stateFlag, tokenTypeFlag } from '../../cli/flags.js';
import { color } from '../../cli/render/style.js';
import type { TokenView } from '../../cli/render/results.js';
import { renderTokenList } from '../../cli/render/token.js';
import type { TokenState, TokenType } from '../../store/store.js';

const DEFAULT_LIMIT = 100;

export default class TokenList extends BaseCommand<typeof TokenList> {
  static override storeUse = 'read' as const;
  static override summary = 'List tokens: jti, type, client, user, state and expiry, never the token';
  static override description = `Newest first. Operators act on a token by its jti (revoke --jti, introspect --jti) without ever holding the token itself.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> --user alice --state active',
    { description: 'Every refresh token of a client, as JSON', command: '<%= config.bin %> <%= command.id %> --client web-shop-1a2b3c4d --type refresh_token --limit 1000 --json' },
  ];

  static override flags = {
    client: Flags.string({ char: 'c', description: 'Only tokens of this client' }),
    user: Flags.string({ char: 'u', description: 'Only tokens of this user' }),
    state: stateFlag,
    type: tokenTypeFlag,
    limit: limitFlag(`Show at most this many, newest first [default: ${DEFAULT_LIMIT}]`),
  };

  async run(): Promise<TokenView[]> {
    const f = this.flags;
    const limit = f.limit ?? DEFAULT_LIMIT;
    const tokens = await (await this.engine()).listTokens({
      clientId: f.client,
      username: f.user,
      state: f.state as TokenState | undefined,
      type: f.type as TokenType | undefined,
      limit,
    });
    if (!this.jsonEnabled()) {
      this.log(renderTokenList(tokens, Date.now()));
      if (tokens.length === limit) this.logToStderr(color.dim(`Showing the newest ${limit}; there may be more (--limit N).`));
    }
    return tokens;
  }
}
