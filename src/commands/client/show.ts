import { Args } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { renderClientShow } from '../../cli/render/client.js';
import type { ClientShowResult } from '../../cli/render/results.js';

export default class ClientShow extends BaseCommand<typeof ClientShow> {
  static override storeUse = 'read' as const;
  static override summary = 'Show one client and how many tokens it holds';
  static override description = 'Everything tokenctl knows about a client except its secret, with its tokens counted by state.';
  static override examples = ['<%= config.bin %> <%= command.id %> web-shop-1a2b3c4d'];
  static override args = { id: Args.string({ description: 'Client ID', required: true }) };

  async run(): Promise<ClientShowResult> {
    const engine = await this.engine();
    const client = await engine.getClient(this.args.id);
    const result: ClientShowResult = { ...client, tokens: await engine.countClientTokens(client.client_id) };
    if (!this.jsonEnabled()) this.log(renderClientShow(result, Date.now()));
    return result;
  }
}
