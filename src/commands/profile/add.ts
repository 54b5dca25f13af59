import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { CliError, EXIT } from '../../cli/errors.js';
import { PROFILE_NAME, readProfiles, writeProfiles, type Profile } from '../../cli/profiles.js';
import { promptHidden, readAllStdin } from '../../cli/token-input.js';

export interface ProfileAddResult {
  name: string;
  file: string;
  url: string;
  client_id: string;
  ca: string | null;
  secret: 'stored' | 'env' | 'file' | 'none' | 'at call time';
  replaced: boolean;
}

export default class ProfileAdd extends BaseCommand<typeof ProfileAdd> {
  // No --db: profiles are not in a store.
  static override baseFlags = {} as typeof BaseCommand.baseFlags;
  static override summary = 'Save a server profile: URL, client ID, CA, and where the client secret comes from';
  static override description = `refresh, revoke and introspect with --profile NAME (or TOKENCTL_PROFILE=NAME) then talk to that server as that client without typing --url, --client-id, --ca or the secret. Profiles are kept in profiles.json in the tokenctl config directory (~/.config/tokenctl), readable by you only (mode 0600).

The secret is never taken from the command line. Choose one: --secret-env VAR (read from that variable at each call), --secret-file PATH (read from that file at each call), --store-secret (read now from TOKENCTL_CLIENT_SECRET, stdin, or a prompt without echo, and kept in the profile file), or --public (no secret). Without any of these, each call takes TOKENCTL_CLIENT_SECRET, else asks at a terminal.`;

  static override examples = [
    { description: 'The secret typed once at a hidden prompt and kept in the profile', command: '<%= config.bin %> <%= command.id %> prod --url https://auth.example.com --client-id rs-1 --store-secret' },
    { description: 'The secret from a file your secret manager writes', command: '<%= config.bin %> <%= command.id %> prod --url https://auth.example.com --client-id rs-1 --secret-file /run/secrets/rs-1' },
    { description: 'A local server with its development certificate', command: '<%= config.bin %> <%= command.id %> dev --url https://127.0.0.1:8443 --client-id demo-client --ca ~/.local/share/tokenctl/tls/cert.pem --secret-env DEMO_SECRET' },
  ];

  static override args = { name: Args.string({ description: 'Profile name (letters, digits, . _ -)', required: true }) };
  static override flags = {
    url: Flags.string({ description: 'Base URL of the token service', required: true }),
    'client-id': Flags.string({ description: 'Client ID to authenticate as', required: true }),
    ca: Flags.string({ description: 'PEM file of a CA to trust for the server certificate', helpValue: '<file>' }),
    'secret-env': Flags.string({ description: 'Take the client secret from this environment variable at each call', exclusive: ['secret-file', 'store-secret', 'public'], helpValue: '<var>' }),
    'secret-file': Flags.string({ description: 'Take the client secret from this file at each call', exclusive: ['store-secret', 'public'], helpValue: '<file>' }),
    'store-secret': Flags.boolean({ description: 'Read the secret now (TOKENCTL_CLIENT_SECRET, stdin, or a hidden prompt) and keep it in the profile file', exclusive: ['public'] }),
    public: Flags.boolean({ description: 'A public client: no secret, no prompt' }),
    force: Flags.boolean({ description: 'Replace a profile of the same name' }),
  };

  async run(): Promise<ProfileAddResult> {
    const f = this.flags;
    const name = this.args.name;
    if (!PROFILE_NAME.test(name)) throw new CliError(`"${name}" is not a profile name: use letters, digits, . _ and -`, EXIT.usage, 'usage');
    try {
      new URL(f.url);
    } catch {
      throw new CliError(`"${f.url}" is not a URL: give the server's base URL, like https://127.0.0.1:8443`, EXIT.usage, 'usage');
    }
    const profiles = readProfiles(this.config.configDir);
    const replaced = name in profiles;
    if (replaced && !f.force) throw new CliError(`a profile "${name}" exists already`, EXIT.usage, 'usage', 'use --force to replace it, or tokenctl profile remove');
    const profile: Profile = { url: f.url, client_id: f['client-id'], ...(f.ca ? { ca: f.ca } : {}) };
    let secret: ProfileAddResult['secret'] = 'at call time';
    if (f['secret-env']) [profile.secret, secret] = [{ env: f['secret-env'] }, 'env'];
    else if (f['secret-file']) [profile.secret, secret] = [{ file: f['secret-file'] }, 'file'];
    else if (f.public) [profile.secret, secret] = [{ none: true }, 'none'];
    else if (f['store-secret']) [profile.secret, secret] = [{ stored: await this.readSecret(f['client-id']) }, 'stored'];
    const file = writeProfiles(this.config.configDir, { ...profiles, [name]: profile });
    const result: ProfileAddResult = { name, file, url: profile.url, client_id: profile.client_id, ca: profile.ca ?? null, secret, replaced };
    if (!this.jsonEnabled()) this.log(`${replaced ? 'Replaced' : 'Saved'} profile ${name} in ${file} (mode 0600): ${profile.url} as ${profile.client_id}; secret: ${secret}.`);
    return result;
  }

  private async readSecret(clientId: string): Promise<string> {
    let secret = process.env.TOKENCTL_CLIENT_SECRET;
    if (!secret) secret = process.stdin.isTTY ? await promptHidden(`Client secret of ${clientId} (not echoed):`) : (await readAllStdin()).trim();
    if (!secret) throw new CliError('--store-secret: no secret given (TOKENCTL_CLIENT_SECRET, stdin or the prompt)', EXIT.usage, 'usage');
    return secret;
  }
}
