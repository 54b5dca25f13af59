import { BaseCommand } from '../cli/base-command.js';
import type { StatusReport } from '../cli/render/results.js';
import { renderStatus } from '../cli/render/status.js';

export default class Status extends BaseCommand<typeof Status> {
  static override storeUse = 'read' as const;
  static override summary = 'Show the store: where it is, its schema version, and what it holds';
  static override description = `Counts clients, and tokens by type and state, and shows the oldest expired token not yet purged. Never shows a token or a secret.`;

  static override examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> --db /var/lib/tokenctl/tokens.db --json'];

  async run(): Promise<StatusReport> {
    const report = await (await this.engine()).status();
    if (!this.jsonEnabled()) this.log(renderStatus(report, Date.now()));
    return report;
  }
}
