import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { CliError, EXIT } from '../../cli/errors.js';
import { renderClientUpdated } from '../../cli/render/client.js';
import type { ClientView } from '../../cli/render/results.js';
import { CLIENT_GRANT_TYPES } from '../../engine/client-settings.js';

export default class ClientUpdate extends BaseCommand<typeof ClientUpdate> {
  static override storeUse = 'write' as const;
  static override summary = "Change a client's redirect URIs, grant types, login-provider mark or DPoP requirement";
  static override description = `Redirect URIs are added with --add-redirect-uri and removed with --remove-redirect-uri, or all replaced with --redirect-uri. --grant-type replaces the list of grants. The change is audited and applies to the next request; tokens already issued stay as they are.`;
  static override examples = [
    { description: 'Let an existing client log users in', command: '<%= config.bin %> <%= command.id %> web-shop-1a2b3c4d --add-redirect-uri https://shop.example.com/callback --grant-type authorization_code --grant-type refresh_token' },
    { description: 'Remove a redirect URI', command: '<%= config.bin %> <%= command.id %> web-shop-1a2b3c4d --remove-redirect-uri https://old.example.com/callback' },
    { description: 'Make a client the login app', command: '<%= config.bin %> <%= command.id %> login-app-5e6f7a8b --login-provider' },
  ];
  static override args = { id: Args.string({ description: 'Client ID', required: true }) };
  static override flags = {
    'redirect-uri': Flags.string({ description: 'Replace the redirect URIs with these; repeat for several', multiple: true, exclusive: ['add-redirect-uri', 'remove-redirect-uri'], helpValue: '<uri>' }),
    'add-redirect-uri': Flags.string({ description: 'Add a redirect URI; repeat for several', multiple: true, helpValue: '<uri>' }),
    'remove-redirect-uri': Flags.string({ description: 'Remove a redirect URI; repeat for several', multiple: true, helpValue: '<uri>' }),
    'grant-type': Flags.string({ description: 'Replace the grants with these; repeat for several', multiple: true, options: [...CLIENT_GRANT_TYPES] }),
    'login-provider': Flags.boolean({ description: 'Mark (or with --no-login-provider unmark) the client as the login app', allowNo: true }),
    'require-dpop': Flags.boolean({ description: 'Refuse (or with --no-require-dpop accept again) token requests without a DPoP proof (docs/dpop.md)', allowNo: true }),
  };

  async run(): Promise<ClientView> {
    const f = this.flags;
    if ([f['redirect-uri'], f['add-redirect-uri'], f['remove-redirect-uri'], f['grant-type'], f['login-provider'], f['require-dpop']].every((v) => v === undefined)) {
      throw new CliError('nothing to change: give --add-redirect-uri, --remove-redirect-uri, --redirect-uri, --grant-type, --[no-]login-provider or --[no-]require-dpop', EXIT.usage, 'nothing_to_change', `see: ${this.config.bin} client update --help`);
    }
    const engine = await this.engine();
    const client = await engine.updateClient(
      this.args.id,
      { redirectUris: f['redirect-uri'], addRedirectUris: f['add-redirect-uri'], removeRedirectUris: f['remove-redirect-uri'], grantTypes: f['grant-type'], loginProvider: f['login-provider'], requireDpop: f['require-dpop'] },

      this.actor(),
    );
    if (!this.jsonEnabled()) this.log(renderClientUpdated(client, Date.now()));
    return client;
  }
}
