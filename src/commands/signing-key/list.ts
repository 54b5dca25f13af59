import { BaseCommand } from '../../cli/base-command.js';
import { renderSigningKeys } from '../../cli/render/receiver.js';
import type { SigningKeyView } from '../../engine/signing-keys.js';

export default class SigningKeyList extends BaseCommand<typeof SigningKeyList> {
  static override storeUse = 'read' as const;
  static override summary = 'List the keys security events are signed with';
  static override description =
    'The current key signs every SET; a retired key stays in the JWKS (/.well-known/jwks.json) for 7 days after its retirement, then is deleted. Private keys are never shown.';
  static override examples = ['<%= config.bin %> <%= command.id %>'];

  async run(): Promise<SigningKeyView[]> {
    const keys = await (await this.engine()).listSigningKeys();
    if (!this.jsonEnabled()) this.log(renderSigningKeys(keys, Date.now()));
    return keys;
  }
}
