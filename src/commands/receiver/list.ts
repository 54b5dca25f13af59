import { BaseCommand } from '../../cli/base-command.js';
import { renderReceiverList } from '../../cli/render/receiver.js';
import type { ReceiverStatusView } from '../../engine/receivers.js';

export default class ReceiverList extends BaseCommand<typeof ReceiverList> {
  static override storeUse = 'read' as const;
  static override summary = 'List the receivers of security events and how their deliveries stand';
  static override description =
    'For each receiver: how it gets its events, how many are pending (push: to be sent or retried; poll: not yet acknowledged), how many are dead letters (push deliveries given up on: requeue them with receiver retry), the age of the oldest pending one, the last error and the last delivery. Authorization values are never shown.';
  static override examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> --json | jq ".[] | select(.dead > 0) | .id"'];

  async run(): Promise<ReceiverStatusView[]> {
    const receivers = await (await this.engine()).listReceivers();
    if (!this.jsonEnabled()) this.log(renderReceiverList(receivers, Date.now()));
    return receivers;
  }
}
