import { Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { lifetimeFlag } from '../../cli/flags.js';
import type { TokenResponse } from '../../cli/render/results.js';
import { renderTokenResponse, tokenNotice } from '../../cli/render/token.js';

export default class TokenIssue extends BaseCommand<typeof TokenIssue> {
  static override summary = 'Issue an access token and a refresh token, as a login would';
  static override description = `Starts a new grant for a user of a client and prints the token response of spec 2.1 (all nine fields). The tokens are shown here, once: the store keeps only their digests.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> --client web-shop-1a2b3c4d --user alice',
    {
      description: 'A narrower scope and a short-lived access token; keep the refresh token',
      command: 'RT=$(<%= config.bin %> <%= command.id %> --client web-shop-1a2b3c4d --user alice --scope read --access-ttl 5m --json | jq -r .refresh_token)',
    },
  ];

  static override flags = {
    client: Flags.string({ char: 'c', description: 'Client ID the tokens are issued to', required: true }),
    user: Flags.string({ char: 'u', description: 'User who authorised the grant (returned as username)', required: true }),
    sub: Flags.string({ description: 'Subject (returned as sub) [default: the user name]' }),
    scope: Flags.string({ description: "Space-separated scope, within the client's [default: the client's scope]" }),
    'access-ttl': lifetimeFlag({ description: "Access token lifetime, e.g. 15m [default: the client's, else 1h]" }),
    'refresh-ttl': lifetimeFlag({ description: "Refresh token lifetime, e.g. 30d [default: the client's, else 30d]" }),
  };

  async run(): Promise<TokenResponse> {
    const f = this.flags;
    const engine = await this.engine();
    const response = await engine.issue({
      clientId: f.client,
      username: f.user,
      sub: f.sub,
      scope: f.scope,
      accessTtlMs: f['access-ttl'],
      refreshTtlMs: f['refresh-ttl'],
    });
    if (!this.jsonEnabled()) {
      this.log(renderTokenResponse(response, Date.now()));
      this.logToStderr(tokenNotice());
    }
    return response;
  }
}
