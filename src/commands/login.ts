import { Flags } from '@oclif/core';
import { BaseCommand } from '../cli/base-command.js';
import { CliError, EXIT } from '../cli/errors.js';
import { dpopKeyFromFlags, dpopNotice } from '../cli/dpop.js';
import { dpopFlags, durationFlag, remoteFlags } from '../cli/flags.js';
import { onInterrupt } from '../cli/interrupt.js';
import { remoteTarget } from '../cli/remote-target.js';
import type { TokenResponse } from '../cli/render/results.js';
import type { LoginError } from '../remote/login-flow.js';
import type { OpenUrl } from '../remote/open-browser.js';
import { renderTokenResponse, tokenNotice } from '../cli/render/token.js';

const { profile, ca } = remoteFlags({ clientIdNeedsUrl: true });
const DEFAULT_TIMEOUT_MS = 5 * 60_000;

export default class Login extends BaseCommand<typeof Login> {
  // No --db: the tokens come from the server, not from a store.
  static override baseFlags = {} as typeof BaseCommand.baseFlags;
  static override summary = 'Log in through a server’s login page and print the tokens it issues';
  static override description = `The authorization code flow of a command-line app (RFC 8252), against any server of this kind: reads the server's metadata (/.well-known/oauth-authorization-server), listens on http://127.0.0.1:<port>/callback, prints the login URL (and opens a browser when there is a terminal and a display, or $BROWSER is set), waits for you to log in, then exchanges the code (PKCE S256) and prints the token response. With --json, exactly the server's answer. With --dpop-key the exchange carries a DPoP proof (RFC 9449), so that the tokens are bound to the key; its thumbprint is shown on stderr.

The client must allow the authorization code grant with the redirect URI http://127.0.0.1/callback (any port matches it): for example client create --name my-cli --public --redirect-uri http://127.0.0.1/callback; serve --demo registers demo-app so. The server needs a login: serve --login-url URL, --dev-login or --demo.

A public client needs no secret. A confidential one takes it from a profile or --client-secret (which other users can see in ps); TOKENCTL_CLIENT_SECRET is not read, because in a shell it usually holds another client's secret (the demo's) and a public client that sends one is refused.`;

  static override examples = [
    { description: 'Against serve --demo', command: '<%= config.bin %> <%= command.id %> --url https://127.0.0.1:8443 --client-id demo-app --ca ~/.local/share/tokenctl/tls/cert.pem' },
    { description: 'On a machine without a browser: open the printed URL elsewhere', command: '<%= config.bin %> <%= command.id %> --url https://auth.example.com --client-id cli-1a2b3c4d --no-browser --port 8765' },
    { description: 'Tokens bound to a new DPoP key, kept in a file for later refreshes', command: '<%= config.bin %> <%= command.id %> --profile dev --dpop-key generate --dpop-key-out dpop.jwk' },
    { description: 'Keep the access token for a script', command: 'AT=$(<%= config.bin %> <%= command.id %> --profile dev --scope read --json | jq -r .access_token)' },
  ];

  static override flags = {
    url: Flags.string({ description: 'Base URL of the server, its issuer (e.g. https://127.0.0.1:8443)', helpGroup: 'REMOTE' }),
    profile,
    'client-id': Flags.string({ description: 'The client to log in as (its redirect URIs include http://127.0.0.1/callback)', helpGroup: 'REMOTE' }),
    'client-secret': Flags.string({ description: 'A confidential client’s password (visible to other users in ps: prefer a profile); omit for a public client', helpGroup: 'REMOTE' }),
    ca,
    scope: Flags.string({ description: 'Space-separated scope to ask for [default: the client’s]' }),
    port: Flags.integer({ description: 'Port of the loopback listener on 127.0.0.1 [default: a free one]', min: 0, max: 65_535, default: 0, helpValue: '<n>' }),
    'no-browser': Flags.boolean({ description: 'Do not open a browser: only print the URL to open', default: false }),
    timeout: durationFlag({ description: 'Give up when the login has not come back within this time [default: 5m]' }),
    ...dpopFlags(),
  };

  async run(): Promise<TokenResponse> {
    const f = this.flags;
    const dpop = await dpopKeyFromFlags(f);
    // No prompt for a secret: a command-line app is a public client (RFC 8252 §8.4) unless told otherwise.
    const remote = await remoteTarget({ url: f.url, profile: f.profile, 'client-id': f['client-id'], 'client-secret': f['client-secret'], ca: f.ca }, this.config.configDir, async () => '', false);
    const { login, LoginError } = await import('../remote/login-flow.js');
    const interrupt = onInterrupt(() => process.stderr.write('\nCtrl-C: stopping the login…\n'));
    try {
      const options = { remote, scope: f.scope, port: f.port, timeoutMs: f.timeout ?? DEFAULT_TIMEOUT_MS, openUrl: await this.opener(), signal: interrupt.signal, dpop };
      const tokens = await login({ ...options, notice: (text) => process.stderr.write(text) });
      if (dpop) process.stderr.write(dpopNotice(dpop, tokens.token_type) + '\n');
      if (!this.jsonEnabled()) {
        this.log(renderTokenResponse(tokens, Date.now()));
        this.logToStderr(tokenNotice());
      }
      return tokens;
    } catch (err) {
      throw err instanceof LoginError ? cliError(err) : err;
    } finally {
      interrupt.dispose();
    }
  }

  /** The system's browser, unless --no-browser; it decides itself whether there is one to open. */
  private async opener(): Promise<OpenUrl> {
    if (this.flags['no-browser']) return async () => false;
    const { systemBrowser } = await import('../remote/open-browser.js');
    return systemBrowser({ env: process.env, platform: process.platform, interactive: Boolean(process.stdout.isTTY || process.stderr.isTTY) });
  }
}

/** How each way the login stops is told: Ctrl-C as an interruption, a port in use as usage, the rest as a failure. */
function cliError(err: LoginError): CliError {
  const exit = err.code === 'interrupted' ? EXIT.interrupted : err.code === 'port_unavailable' ? EXIT.usage : EXIT.failure;
  return new CliError(err.message, exit, err.code, err.hint);
}
