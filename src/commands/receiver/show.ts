import { Args } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { renderReceiverStatus } from '../../cli/render/receiver.js';
import type { ReceiverStatusView } from '../../engine/receivers.js';

export default class ReceiverShow extends BaseCommand<typeof ReceiverShow> {
  static override storeUse = 'read' as const;
  static override summary = 'Show one receiver of security events: its settings and how its deliveries stand';
  static override description = 'Its delivery, endpoint or client, audience, retention, pending deliveries and the age of the oldest, dead letters, last delivery and last error. The Authorization value is never shown.';
  static override examples = ['<%= config.bin %> <%= command.id %> api-gw'];

  static override args = { id: Args.string({ description: 'Receiver id', required: true }) };

  async run(): Promise<ReceiverStatusView> {
    const receiver = await (await this.engine()).receiverStatus(this.args.id);
    if (!this.jsonEnabled()) this.log(renderReceiverStatus(receiver, Date.now()));
    return receiver;
  }
}
