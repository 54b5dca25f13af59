import { BaseCommand } from '../../cli/base-command.js';
import { describeSecret, profilesPath, readProfiles } from '../../cli/profiles.js';
import { table } from '../../cli/render/layout.js';
import { color } from '../../cli/render/style.js';

export interface ProfileView {
  name: string;
  url: string;
  client_id: string;
  ca: string | null;
  /** Where the secret comes from; never the secret. */
  secret: string;
}

export default class ProfileList extends BaseCommand<typeof ProfileList> {
  // No --db: profiles are not in a store.
  static override baseFlags = {} as typeof BaseCommand.baseFlags;
  static override summary = 'List saved server profiles (never their secrets)';
  static override description = 'Shows each profile of profiles.json in the tokenctl config directory: its URL, client ID, CA file and where its client secret comes from.';
  static override examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> --json'];

  async run(): Promise<ProfileView[]> {
    const profiles = readProfiles(this.config.configDir);
    const views = Object.entries(profiles).map(([name, p]) => ({ name, url: p.url, client_id: p.client_id, ca: p.ca ?? null, secret: describeSecret(p) }));
    if (!this.jsonEnabled()) {
      if (views.length === 0) this.log(color.dim(`No profiles in ${profilesPath(this.config.configDir)} (tokenctl profile add).`));
      else this.log(table(['NAME', 'URL', 'CLIENT ID', 'CA', 'SECRET'], views.map((v) => [v.name, v.url, v.client_id, v.ca ?? '', v.secret])));
    }
    return views;
  }
}
