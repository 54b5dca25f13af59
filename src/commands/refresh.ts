import { Flags } from '@oclif/core';
import { BaseCommand } from '../cli/base-command.js';
import { CliError, EXIT } from '../cli/errors.js';
import { dpopKeyFromFlags, dpopNotice } from '../cli/dpop.js';
import { assertTokenShape, dpopFlags, remoteFlags } from '../cli/flags.js';
import { isRemote, remoteTarget } from '../cli/remote-target.js';
import { resolveToken, tokenArg, tokenFileFlag } from '../cli/token-input.js';
import type { TokenResponse } from '../cli/render/results.js';
import { renderTokenResponse, tokenNotice } from '../cli/render/token.js';

export default class Refresh extends BaseCommand<typeof Refresh> {
  static override summary = 'Exchange a refresh token for a new access token';
  static override description = `Prints the token response (access_token, refresh_token, expires_in, scope and the other fields a client receives). Locally, the token's own client is used, or with --client-id the client is authenticated and must own the token. With --url (or --profile) the request goes to a server (POST /oauth/token, client credentials in a Basic header) and its answer is printed; with --dpop-key it carries a DPoP proof (RFC 9449), retried once with the server's nonce when it asks for one, and the key's thumbprint is shown on stderr.

The token is never read from stdin unless you say so: give it as - (stdin; a hidden prompt at a terminal) or with --token-file. The client secret can come from TOKENCTL_CLIENT_SECRET, a profile, or a prompt without echo instead of --client-secret, which other users can see in ps.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> tcr_3q2Yt…',
    { description: 'As a client, narrowing the scope; the secret from the environment', command: 'TOKENCTL_CLIENT_SECRET=… <%= config.bin %> <%= command.id %> --token-file rt.txt --client-id web-shop-1a2b3c4d --scope read' },
    { description: 'Against a running server', command: '<%= config.bin %> <%= command.id %> - --url https://127.0.0.1:8443 --client-id web-shop-1a2b3c4d --ca cert.pem < rt.txt' },
    { description: 'A DPoP-bound refresh token: with a proof of its key', command: '<%= config.bin %> <%= command.id %> --token-file rt.txt --url https://127.0.0.1:8443 --client-id cli-1a2b3c4d --dpop-key dpop.jwk' },
  ];

  static override args = { token: tokenArg('The refresh token (tcr_…)') };
  static override flags = {
    'token-file': tokenFileFlag,
    scope: Flags.string({ description: 'A narrower scope for the new access token (RFC 6749 §6)' }),
    ...remoteFlags({ clientIdNeedsUrl: false }),
    ...dpopFlags(),
  };

  async run(): Promise<TokenResponse> {
    const f = this.flags;
    const token = await resolveToken(this.args.token, f['token-file']);
    if (token === undefined) throw new CliError('give the refresh token: as TOKEN, - (stdin), or --token-file', EXIT.usage, 'usage');
    const response = isRemote(f) ? await this.remote(token) : await this.local(token);
    if (!this.jsonEnabled()) {
      this.log(renderTokenResponse(response, Date.now()));
      this.logToStderr(tokenNotice());
    }
    return response;
  }

  private async remote(token: string): Promise<TokenResponse> {
    const key = await dpopKeyFromFlags(this.flags);
    const target = await remoteTarget(this.flags, this.config.configDir);
    const { remoteRefresh } = await import('../remote/http-client.js');
    const response = await remoteRefresh(target, token, this.flags.scope, key);
    // On stderr even with --json (oclif silences logToStderr then): stdout keeps the server's answer.
    if (key) process.stderr.write(dpopNotice(key, String(response.token_type)) + '\n');
    return response;
  }

  private async local(token: string): Promise<TokenResponse> {
    assertTokenShape(token);
    if (this.flags['dpop-key'] !== undefined) throw new CliError('--dpop-key goes with --url: a proof is for a server\'s token endpoint', EXIT.usage, 'usage');
    if (token.startsWith('tca_')) throw new CliError('this is an access token: refresh takes a refresh token (tcr_…)', EXIT.usage, 'invalid_input');
    const engine = await this.engine();
    const clientId = this.flags['client-id'];
    if (clientId === undefined) {
      if (this.flags['client-secret'] !== undefined) throw new CliError('--client-secret goes with --client-id', EXIT.usage, 'usage');
      return engine.refreshAsOperator(token, this.flags.scope);
    }
    // With credentials, the client must prove itself and own the token, as over HTTP.
    const secret = this.flags['client-secret'] ?? (process.env.TOKENCTL_CLIENT_SECRET || undefined);
    return (await engine.refreshAsClient({ credentials: { clientId, secrets: secret ? [secret] : [] }, token, scope: this.flags.scope })).result;
  }
}
