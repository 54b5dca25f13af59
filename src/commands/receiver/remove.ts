import { Args } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { yesFlag } from '../../cli/flags.js';
import { confirmOrStop } from '../../cli/prompts.js';
import { renderReceiverRemoved } from '../../cli/render/receiver.js';

export interface ReceiverRemoveResult {
  id: string;
  /** Pending and dead deliveries dropped with it. */
  dropped: number;
  /** The store it was removed from. */
  store: string;
}

export default class ReceiverRemove extends BaseCommand<typeof ReceiverRemove> {
  static override summary = 'Remove a receiver of security events';
  static override description =
    'Its pending and dead deliveries go with it. When there are any, asks for confirmation first; without a terminal it refuses unless --yes is given.';
  static override examples = ['<%= config.bin %> <%= command.id %> api-gw', '<%= config.bin %> <%= command.id %> api-gw --yes'];

  static override args = { id: Args.string({ description: 'Receiver id', required: true }) };
  static override flags = { yes: yesFlag };

  async run(): Promise<ReceiverRemoveResult> {
    const engine = await this.engine();
    const status = await engine.receiverStatus(this.args.id);
    const dropped = status.pending + status.dead;
    if (dropped > 0) {
      await confirmOrStop(`Remove receiver ${status.id} and drop its ${dropped} undelivered event(s)?`, { yes: this.flags.yes, declined: 'Nothing removed' });
    }
    await engine.removeReceiver(status.id, this.actor());
    const result = { id: status.id, dropped, store: engine.store.location };
    if (!this.jsonEnabled()) this.log(renderReceiverRemoved(result));
    return result;
  }
}
