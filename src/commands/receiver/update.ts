import { Args } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { receiverRetentionFlag } from '../../cli/flags.js';
import { renderReceiverStatus } from '../../cli/render/receiver.js';
import type { ReceiverStatusView } from '../../engine/receivers.js';

export default class ReceiverUpdate extends BaseCommand<typeof ReceiverUpdate> {
  static override summary = "Change a receiver of security events: its retention";
  static override description = "The retention applies from serve's next housekeeping (within a minute): deliveries pending longer than it become dead letters (receiver retry requeues them). Audited as receiver.update.";
  static override examples = [{ description: 'Keep a week of events for a receiver that is down for maintenance', command: '<%= config.bin %> <%= command.id %> rs-1 --retention 7d' }];

  static override args = { id: Args.string({ description: 'Receiver id', required: true }) };
  static override flags = { retention: receiverRetentionFlag({ required: true }) };

  async run(): Promise<ReceiverStatusView> {
    const receiver = await (await this.engine()).updateReceiver(this.args.id, { retentionMs: this.flags.retention }, this.actor());
    if (!this.jsonEnabled()) this.log(renderReceiverStatus(receiver, Date.now()));
    return receiver;
  }
}
