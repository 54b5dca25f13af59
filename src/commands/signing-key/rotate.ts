import { BaseCommand } from '../../cli/base-command.js';

export interface SigningKeyRotateResult {
  kid: string;
  created_at: number;
}

export default class SigningKeyRotate extends BaseCommand<typeof SigningKeyRotate> {
  static override summary = 'Make a new key the one security events are signed with';
  static override description =
    'The new ES256 key signs every SET from now on (every serve process picks it up within seconds); the previous key stays in the JWKS for 7 days, so SETs it signed still verify. The rotation is recorded in the audit log (signing_key.rotate). serve also rotates by itself when the current key is 90 days old.';
  static override examples = ['<%= config.bin %> <%= command.id %>'];

  async run(): Promise<SigningKeyRotateResult> {
    const key = await (await this.engine()).rotateSigningKey(this.actor());
    if (!this.jsonEnabled()) this.log(`New signing key ${key.kid}: it signs every SET from now on; the previous one stays published for 7 days.`);
    return { kid: key.kid, created_at: key.createdAt };
  }
}
