import { Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { bareFlag, lifetimeFlag } from '../../cli/flags.js';
import type { TokenResponse } from '../../cli/render/results.js';
import { table } from '../../cli/render/layout.js';
import { renderTokenResponse, tokenNotice } from '../../cli/render/token.js';
import { MAX_ISSUE_COUNT } from '../../engine/issue.js';

export default class TokenIssue extends BaseCommand<typeof TokenIssue> {
  static override summary = 'Issue an access token and a refresh token, as a login would';
  static override description = `Starts a new grant for a user of a client and prints the token response a client receives at login (access_token, refresh_token, expires_in, scope, jti and the rest). The tokens are shown here, once: the store keeps only their digests.

--count N makes N grants at once, in one store transaction (all or none): with --json an array of N token responses, otherwise one line per grant.

--bare prints the access token and the refresh token on one line, separated by a space, and nothing else: read -r AT RT <<< "$(tokenctl token issue … --bare)".`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> --client web-shop-1a2b3c4d --user alice',
    { description: 'Keep both tokens in variables', command: 'read -r AT RT <<< "$(<%= config.bin %> <%= command.id %> --client web-shop-1a2b3c4d --user alice --bare)"' },
    {
      description: 'A narrower scope and a short-lived access token; keep the refresh token',
      command: 'RT=$(<%= config.bin %> <%= command.id %> --client web-shop-1a2b3c4d --user alice --scope read --access-ttl 5m --json | jq -r .refresh_token)',
    },
    { description: '1,000 grants for a load test, as JSON', command: '<%= config.bin %> <%= command.id %> --client web-shop-1a2b3c4d --user load --count 1000 --json > grants.json' },
  ];

  static override flags = {
    client: Flags.string({ char: 'c', description: 'Client ID the tokens are issued to', required: true }),
    user: Flags.string({ char: 'u', description: 'User who authorised the grant (returned as username)', required: true }),
    sub: Flags.string({ description: 'Subject (returned as sub) [default: the user name]' }),
    scope: Flags.string({ description: "Space-separated scope, within the client's [default: the client's scope]" }),
    'access-ttl': lifetimeFlag({ description: "Access token lifetime, e.g. 15m [default: the client's, else 1h]" }),
    'refresh-ttl': lifetimeFlag({ description: "Refresh token lifetime, e.g. 30d [default: the client's, else 30d]" }),
    count: Flags.integer({ description: `Issue this many grants at once, in one transaction (at most ${MAX_ISSUE_COUNT})`, min: 1, max: MAX_ISSUE_COUNT, helpValue: '<n>' }),
    bare: bareFlag,
  };

  /** --bare: `ACCESS_TOKEN REFRESH_TOKEN`, one line per grant (for `read -r AT RT`). */
  static override bare = (r: TokenResponse | TokenResponse[]): string[] => (Array.isArray(r) ? r : [r]).map((t) => `${t.access_token} ${t.refresh_token}`);

  async run(): Promise<TokenResponse | TokenResponse[]> {
    const f = this.flags;
    const engine = await this.engine();
    const input = {
      clientId: f.client,
      username: f.user,
      sub: f.sub,
      scope: f.scope,
      accessTtlMs: f['access-ttl'],
      refreshTtlMs: f['refresh-ttl'],
    };
    if (f.count !== undefined) {
      const responses = await engine.issueMany(input, f.count);
      if (!this.jsonEnabled()) {
        this.log(table(['JTI', 'ACCESS TOKEN', 'REFRESH TOKEN'], responses.map((r) => [r.jti, r.access_token, r.refresh_token])));
        this.logToStderr(tokenNotice());
      }
      return responses;
    }
    const response = await engine.issue(input);
    if (!this.jsonEnabled()) {
      this.log(renderTokenResponse(response, Date.now()));
      this.logToStderr(tokenNotice());
    }
    return response;
  }
}
