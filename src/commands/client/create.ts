import { Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { bareFlag, lifetimeFlag } from '../../cli/flags.js';
import { resolveSecret } from '../../cli/token-input.js';
import { renderClientCreated, secretNotice } from '../../cli/render/client.js';
import type { ClientCreateResult } from '../../cli/render/results.js';
import { clientSettingFlags } from '../../cli/client-flags.js';

export default class ClientCreate extends BaseCommand<typeof ClientCreate> {
  static override storeUse = 'create' as const;
  static override summary = 'Register a client and print its client_id and, this once, its client_secret';
  static override description = `A confidential client gets a generated password (or the one given with --secret); a public client (an app that cannot keep a secret, e.g. a mobile app using PKCE) has none. With --redirect-uri it logs users in through the authorization code flow with PKCE (and refreshes); --grant-type chooses its grants otherwise (default: refresh_token only). The secret can be chosen with --secret - (read from stdin, or a prompt without echo at a terminal) rather than typed on the command line. Only a salted hash of the password is stored: it is shown here once and never again (a lost secret is replaced with "client rotate-secret").`;

  static override examples = [
    { description: 'A confidential client limited to two scopes', command: '<%= config.bin %> <%= command.id %> --name "Web shop" --scope "read write"' },
    { description: 'A public client with short-lived access tokens', command: '<%= config.bin %> <%= command.id %> --name "Mobile app" --public --access-ttl 15m' },
    { description: 'A web app that logs users in (authorization code with PKCE, then refresh)', command: '<%= config.bin %> <%= command.id %> --name "Web app" --redirect-uri https://app.example.com/callback' },
    { description: 'A command-line or desktop app: public, any loopback port (RFC 8252)', command: '<%= config.bin %> <%= command.id %> --name "CLI" --public --redirect-uri http://127.0.0.1/callback' },
    { description: 'A cron job calling an API (client credentials)', command: '<%= config.bin %> <%= command.id %> --name nightly-report --grant-type client_credentials --scope reports' },
    { description: 'The operator\'s login app (answers login requests: docs/login.md)', command: '<%= config.bin %> <%= command.id %> --name "Login app" --login-provider' },
    { description: 'Keep the client id in a variable, for the commands that follow', command: 'CLIENT=$(<%= config.bin %> <%= command.id %> --name "Web shop" --bare)' },
    { description: 'Keep the secret in a variable (JSON output)', command: 'SECRET=$(<%= config.bin %> <%= command.id %> --name ci --json | jq -r .client_secret)' },
  ];

  static override flags = {
    name: Flags.string({ char: 'n', description: 'Human name of the client, for operators', required: true }),
    public: Flags.boolean({ description: 'A public client (PKCE): no password', default: false, exclusive: ['secret'] }),
    secret: Flags.string({ description: 'Use this password instead of generating one; - reads it from stdin (a prompt without echo at a terminal), keeping it out of ps and shell history' }),
    scope: Flags.string({ description: 'Space-separated scopes the client may be granted [default: any]' }),
    org: Flags.string({ description: 'Organisation identifier, returned as org_id' }),
    audience: Flags.string({ description: 'Audience of its tokens, returned as aud' }),
    'access-ttl': lifetimeFlag({ description: 'Lifetime of its access tokens, e.g. 15m [default: 1h]' }),
    'refresh-ttl': lifetimeFlag({ description: 'Lifetime of its refresh tokens, e.g. 30d [default: 30d]' }),
    ...clientSettingFlags(),
    bare: bareFlag,
  };

  /** --bare: the client id alone (its secret needs --json, or is gone). */
  static override bare = (r: ClientCreateResult): string[] => [r.client_id];

  async run(): Promise<ClientCreateResult> {
    const f = this.flags;
    const engine = await this.engine();
    const { client, client_secret } = await engine.createClient(
      {
        name: f.name,
        public: f.public,
        secret: await resolveSecret(f.secret, 'Client secret'),
        scope: f.scope,
        orgId: f.org,
        audience: f.audience,
        accessTtlMs: f['access-ttl'],
        refreshTtlMs: f['refresh-ttl'],
        redirectUris: f['redirect-uri'],
        grantTypes: f['grant-type'],
        loginProvider: f['login-provider'],
        requireDpop: f['require-dpop'],
      },
      this.actor(),
    );
    const result: ClientCreateResult = { ...client, client_secret };
    if (!this.jsonEnabled()) {
      this.log(renderClientCreated(result, Date.now()));
      if (client_secret !== null) this.logToStderr(`\n${secretNotice()}`);
    }
    return result;
  }
}
