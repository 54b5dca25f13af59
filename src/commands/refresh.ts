import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../cli/base-command.js';
import { CliError, EXIT } from '../cli/errors.js';
import { assertTokenShape, remoteFlags } from '../cli/flags.js';
import type { TokenResponse } from '../cli/render/results.js';
import { renderTokenResponse, tokenNotice } from '../cli/render/token.js';

export default class Refresh extends BaseCommand<typeof Refresh> {
  static override summary = 'Exchange a refresh token for a new access token (spec 4.1)';
  static override description = `Prints the token response of spec 2.1. Locally, the token's own client is used, or with --client-id the client is authenticated and must own the token. With --url the request goes to a server (POST /oauth/token with the spec's Basic header) and its answer is printed.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> tcr_3q2Yt…',
    { description: 'As a client, narrowing the scope', command: '<%= config.bin %> <%= command.id %> "$RT" --client-id web-shop-1a2b3c4d --client-secret "$SECRET" --scope read' },
    { description: 'Against a running server', command: '<%= config.bin %> <%= command.id %> "$RT" --url https://127.0.0.1:8443 --client-id web-shop-1a2b3c4d --client-secret "$SECRET" --ca cert.pem' },
  ];

  static override args = { token: Args.string({ description: 'The refresh token (tcr_…)', required: true }) };
  static override flags = {
    scope: Flags.string({ description: 'A narrower scope for the new access token (RFC 6749 §6)' }),
    ...remoteFlags({ clientIdNeedsUrl: false }),
  };

  async run(): Promise<TokenResponse> {
    const f = this.flags;
    const response = f.url ? await this.remote(f.url) : await this.local();
    if (!this.jsonEnabled()) {
      this.log(renderTokenResponse(response, Date.now()));
      this.logToStderr(tokenNotice());
    }
    return response;
  }

  private async remote(url: string): Promise<TokenResponse> {
    const f = this.flags;
    if (!f['client-id']) throw new CliError('--url needs --client-id: the server authenticates the client', EXIT.usage, 'usage');
    const { remoteRefresh } = await import('../client/remote.js');
    return remoteRefresh({ url, clientId: f['client-id'], clientSecret: f['client-secret'], ca: f.ca }, this.args.token, f.scope);
  }

  private async local(): Promise<TokenResponse> {
    const token = this.args.token;
    assertTokenShape(token);
    if (token.startsWith('tca_')) throw new CliError('this is an access token: refresh takes a refresh token (tcr_…)', EXIT.usage, 'invalid_input');
    const engine = await this.engine();
    const { 'client-id': clientId, 'client-secret': secret } = this.flags;
    if (clientId === undefined) return engine.refreshAsOperator(token, this.flags.scope);
    // With credentials, the client must prove itself and own the token, as over HTTP.
    const client = await engine.authenticate({ clientId, secrets: secret ? [secret] : [] });
    return engine.refresh({ client, refreshToken: token, scope: this.flags.scope });
  }
}
