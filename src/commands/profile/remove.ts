import { Args } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { getProfile, readProfiles, writeProfiles } from '../../cli/profiles.js';

export default class ProfileRemove extends BaseCommand<typeof ProfileRemove> {
  // No --db: profiles are not in a store.
  static override baseFlags = {} as typeof BaseCommand.baseFlags;
  static override summary = 'Remove a saved server profile (and any secret kept in it)';
  static override examples = ['<%= config.bin %> <%= command.id %> prod'];
  static override args = { name: Args.string({ description: 'Profile name', required: true }) };

  async run(): Promise<{ name: string; removed: boolean }> {
    const name = this.args.name;
    getProfile(this.config.configDir, name); // says which file was looked at when there is none
    const { [name]: _removed, ...rest } = readProfiles(this.config.configDir);
    writeProfiles(this.config.configDir, rest);
    if (!this.jsonEnabled()) this.log(`Removed profile ${name}.`);
    return { name, removed: true };
  }
}
