import { BaseCommand } from '../../cli/base-command.js';
import { renderClientList } from '../../cli/render/client.js';
import type { ClientView } from '../../cli/render/results.js';

export default class ClientList extends BaseCommand<typeof ClientList> {
  static override storeUse = 'read' as const;
  static override summary = 'List registered clients';
  static override description = 'Shows every client: id, name, type, scope and creation date. Secrets are never shown.';
  static override examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> --json | jq -r ".[].client_id"'];

  async run(): Promise<ClientView[]> {
    const clients = await (await this.engine()).listClients();
    if (!this.jsonEnabled()) this.log(renderClientList(clients, Date.now()));
    return clients;
  }
}
