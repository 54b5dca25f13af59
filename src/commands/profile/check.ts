import { Args } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { remoteTarget } from '../../cli/remote-target.js';
import { renderProfileCheck } from '../../cli/render/profile.js';
import { EXIT } from '../../cli/errors.js';

/** `profile check --json`. */
export interface ProfileCheckResult {
  name: string;
  url: string;
  client_id: string;
  answers: boolean;
  credentials: 'accepted' | 'refused' | 'unknown';
  problem?: string;
}

export default class ProfileCheck extends BaseCommand<typeof ProfileCheck> {
  // No --db: profiles are not in a store.
  static override baseFlags = {} as typeof BaseCommand.baseFlags;
  static override summary = "Check a saved profile: does its server answer, and does it accept the profile's credentials";
  static override description = `Sends the server one introspection request (POST /oauth/introspection) for a random token no server holds, as the profile's client: an answer says the server is there, a 200 that it accepted the credentials, a 401 that it refused them. Nothing is changed on the server. Exit 0 when both hold, 1 otherwise.`;
  static override examples = ['<%= config.bin %> <%= command.id %> prod', '<%= config.bin %> <%= command.id %> prod --json'];
  static override args = { name: Args.string({ description: 'Profile name', required: true }) };

  async run(): Promise<ProfileCheckResult> {
    const target = await remoteTarget({ profile: this.args.name }, this.config.configDir);
    const { checkCredentials } = await import('../../remote/check.js');
    const check = await checkCredentials(target);
    const result: ProfileCheckResult = { name: this.args.name, url: target.url, client_id: target.clientId, ...check };
    if (!this.jsonEnabled()) this.log(renderProfileCheck(result));
    if (result.credentials !== 'accepted') process.exitCode = EXIT.failure;
    return result;
  }
}
