import { Args } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { receiverAlgFlag, receiverEventsFlag, receiverRetentionFlag } from '../../cli/flags.js';
import { renderReceiverStatus } from '../../cli/render/receiver.js';
import type { ReceiverStatusView } from '../../engine/receivers.js';

export default class ReceiverUpdate extends BaseCommand<typeof ReceiverUpdate> {
  static override summary = "Change a receiver of security events: its retention, events or algorithm";
  static override description = "The retention applies from serve's next housekeeping (within a minute): deliveries pending longer than it become dead letters (receiver retry requeues them). --events and --alg apply from its next SET, checked as the SSF stream API checks them. Audited as receiver.update.";
  static override examples = [
    { description: 'Keep a week of events for a receiver that is down for maintenance', command: '<%= config.bin %> <%= command.id %> rs-1 --retention 7d' },
    { description: 'Tell it CAEP session-revoked besides tokenctl\'s own event, signed RS256', command: '<%= config.bin %> <%= command.id %> rs-1 --events tokens-revoked,session-revoked --alg RS256' },
  ];

  static override args = { id: Args.string({ description: 'Receiver id', required: true }) };
  static override flags = { retention: receiverRetentionFlag(), events: receiverEventsFlag(), alg: receiverAlgFlag() };

  async run(): Promise<ReceiverStatusView> {
    const receiver = await (await this.engine()).updateReceiver(this.args.id, this.change(), this.actor());
    if (!this.jsonEnabled()) this.log(renderReceiverStatus(receiver, Date.now()));
    return receiver;
  }

  private change(): { retentionMs?: number; eventsRequested?: string[]; alg?: string } {
    const f = this.flags;
    return { ...(f.retention !== undefined ? { retentionMs: f.retention } : {}), ...(f.events !== undefined ? { eventsRequested: f.events } : {}), ...(f.alg !== undefined ? { alg: f.alg } : {}) };
  }
}
