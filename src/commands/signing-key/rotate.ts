import { Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { SET_ALG, SET_ALGS } from '../../engine/signing-keys.js';

export interface SigningKeyRotateResult {
  kid: string;
  alg: string;
  created_at: number;
}

export default class SigningKeyRotate extends BaseCommand<typeof SigningKeyRotate> {
  static override summary = 'Make a new key the one security events are signed with';
  static override description =
    'The new key of the algorithm (ES256 by default, or RS256) signs every SET of that algorithm from now on (every serve process picks it up within seconds); the other algorithm keeps its key. The previous key stays in the JWKS for 7 days, so SETs it signed still verify. The rotation is recorded in the audit log (signing_key.rotate). serve also rotates by itself when a current key is 90 days old.';
  static override examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> --alg RS256'];
  static override flags = {
    alg: Flags.string({ options: [...SET_ALGS], default: SET_ALG, description: 'The JWS algorithm of the new key (streams choose theirs: receiver add --alg, or SSF stream management)' }),
  };

  async run(): Promise<SigningKeyRotateResult> {
    const { flags } = await this.parse(SigningKeyRotate);
    const key = await (await this.engine()).rotateSigningKey(this.actor(), flags.alg as (typeof SET_ALGS)[number]);
    if (!this.jsonEnabled()) this.log(`New ${key.alg} signing key ${key.kid}: it signs every ${key.alg} SET from now on; the previous one stays published for 7 days.`);
    return { kid: key.kid, alg: key.alg, created_at: key.createdAt };
  }
}
