import { Args } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { CliError, EXIT } from '../../cli/errors.js';
import { yesFlag } from '../../cli/flags.js';
import { confirmOrStop } from '../../cli/prompts.js';
import { renderSecretRotated, secretNotice } from '../../cli/render/client.js';
import type { ClientRotateSecretResult } from '../../cli/render/results.js';

export default class ClientRotateSecret extends BaseCommand<typeof ClientRotateSecret> {
  static override summary = 'Give a confidential client a new secret, shown this once';
  static override description = `The old secret stops working at once, in every process using the store (a running server included). Asks for confirmation unless --yes; without a terminal it refuses unless --yes. Tokens already issued stay valid.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> web-shop-1a2b3c4d',
    { description: 'In a script, keeping the new secret', command: 'SECRET=$(<%= config.bin %> <%= command.id %> web-shop-1a2b3c4d --yes --json | jq -r .client_secret)' },
  ];

  static override args = { id: Args.string({ description: 'Client ID', required: true }) };
  static override flags = { yes: yesFlag };

  async run(): Promise<ClientRotateSecretResult> {
    const engine = await this.engine();
    const client = await engine.getClient(this.args.id);
    if (client.type === 'public') throw new CliError(`client "${client.client_id}" is public and has no secret to rotate`, EXIT.usage, 'invalid_input');
    await confirmOrStop(`Replace the secret of client ${client.client_id}? The old one stops working at once.`, {
      yes: this.flags.yes,
      declined: 'Secret not changed',
    });
    const rotated = await engine.rotateClientSecret(client.client_id, this.actor());
    const result: ClientRotateSecretResult = {
      client_id: rotated.client.client_id,
      client_secret: rotated.client_secret!,
      secret_updated_at: rotated.client.secret_updated_at,
      store: engine.store.location,
    };
    if (!this.jsonEnabled()) {
      this.log(renderSecretRotated(result, Date.now()));
      this.logToStderr(`\n${secretNotice()}`);
    }
    return result;
  }
}
