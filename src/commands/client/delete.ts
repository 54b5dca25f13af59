import { Args } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { dryRunFlag, yesFlag } from '../../cli/flags.js';
import { confirmOrStop } from '../../cli/prompts.js';
import { renderClientDeleted, renderClientDeletePlan } from '../../cli/render/client.js';
import type { ClientDeleteResult } from '../../cli/render/results.js';

export default class ClientDelete extends BaseCommand<typeof ClientDelete> {
  static override summary = 'Delete a client and every token issued to it';
  static override description = `Shows what will go (the client and how many tokens), then asks for confirmation. Without a terminal it refuses unless --yes is given. Its tokens stop working at once, and its credentials no longer authenticate.`;

  static override examples = [
    { description: 'See what would be deleted', command: '<%= config.bin %> <%= command.id %> web-shop-1a2b3c4d --dry-run' },
    { description: 'Delete without asking (scripts)', command: '<%= config.bin %> <%= command.id %> web-shop-1a2b3c4d --yes' },
  ];

  static override args = { id: Args.string({ description: 'Client ID', required: true }) };
  static override flags = { yes: yesFlag, 'dry-run': dryRunFlag };

  async run(): Promise<ClientDeleteResult> {
    const engine = await this.engine();
    const client = await engine.getClient(this.args.id);
    const tokens = (await engine.countClientTokens(client.client_id)).total;
    let result: ClientDeleteResult = { client, tokens, deleted: false, dry_run: this.flags['dry-run'], store: engine.store.location };
    if (!result.dry_run) {
      if (!this.flags.yes && !this.jsonEnabled()) this.logToStderr(renderClientDeletePlan(client, tokens));
      await confirmOrStop(`Delete client ${client.client_id} and its ${tokens} token(s)?`, { yes: this.flags.yes, declined: 'Nothing deleted' });
      await engine.deleteClient(client.client_id, this.actor());
      result = { ...result, deleted: true };
    }
    if (!this.jsonEnabled()) this.log(renderClientDeleted(result));
    return result;
  }
}
