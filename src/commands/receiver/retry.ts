import { Args } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { renderReceiverRetried } from '../../cli/render/receiver.js';

export interface ReceiverRetryResult {
  id: string;
  requeued: number;
}

export default class ReceiverRetry extends BaseCommand<typeof ReceiverRetry> {
  static override summary = 'Requeue a receiver\'s dead letters';
  static override description =
    'Deliveries given up on (a 400 from the receiver, or pending or failing past its retention) are pending again at once, in event order, with their retry count reset: pushed, or answered to the next poll.';
  static override examples = ['<%= config.bin %> <%= command.id %> api-gw'];

  static override args = { id: Args.string({ description: 'Receiver id', required: true }) };

  async run(): Promise<ReceiverRetryResult> {
    const requeued = await (await this.engine()).retryReceiver(this.args.id, this.actor());
    if (!this.jsonEnabled()) this.log(renderReceiverRetried(this.args.id, requeued));
    return { id: this.args.id, requeued };
  }
}
