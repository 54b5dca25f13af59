import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../cli/base-command.js';
import { CliError, EXIT } from '../cli/errors.js';
import { assertTokenShape, dryRunFlag, hintFlag, remoteFlags, yesFlag } from '../cli/flags.js';
import { confirmOrStop } from '../cli/prompts.js';
import type { RevocationResult, RevokeBulkResult } from '../cli/render/results.js';
import { bulkQuestion, describeSelection, renderBulkRevocation, renderRevocation } from '../cli/render/revoke.js';
import type { BulkSelector } from '../store/store.js';

export default class Revoke extends BaseCommand<typeof Revoke> {
  static override summary = 'Revoke a token, or in bulk every active token of a jti, a user or a client';
  static override description = `With TOKEN: revokes that token (spec 4.2) and prints the revocation result of spec 2.2; revoking a refresh token also revokes the access tokens of its grant.

In bulk (--jti, --user [--client], --client): shows how many active tokens are selected and asks for confirmation. Without a terminal it refuses unless --yes is given; --dry-run only shows. With --url the single revocation goes to a server (POST /oauth/revocation).`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> tca_Xk2…',
    { description: 'Log a user out everywhere', command: '<%= config.bin %> <%= command.id %> --user alice --yes' },
    { description: 'How many tokens of a client would go', command: '<%= config.bin %> <%= command.id %> --client web-shop-1a2b3c4d --dry-run' },
    { description: 'Against a running server, as a client', command: '<%= config.bin %> <%= command.id %> "$TOKEN" --url https://127.0.0.1:8443 --client-id web-shop-1a2b3c4d --client-secret "$SECRET"' },
  ];

  static override args = { token: Args.string({ description: 'The token to revoke (tca_… or tcr_…)' }) };
  static override flags = {
    hint: hintFlag,
    jti: Flags.string({ description: 'Revoke the token with this jti (and, for a refresh token, its grant)', exclusive: ['user', 'client'], helpGroup: 'BULK' }),
    user: Flags.string({ char: 'u', description: 'Revoke every active token of this user (narrow with --client)', helpGroup: 'BULK' }),
    client: Flags.string({ char: 'c', description: 'Revoke every active token of this client', helpGroup: 'BULK' }),
    yes: yesFlag,
    'dry-run': dryRunFlag,
    ...remoteFlags({ clientIdNeedsUrl: true }),
  };

  async run(): Promise<RevocationResult | RevokeBulkResult> {
    const { token } = this.args;
    const f = this.flags;
    const bulk = f.jti !== undefined || f.user !== undefined || f.client !== undefined;
    if ((token === undefined) === !bulk) {
      throw new CliError('give exactly one of: TOKEN, --jti J, --user NAME [--client ID], --client ID', EXIT.usage, 'usage');
    }
    if (token === undefined) return this.revokeBulk();
    if (f['dry-run']) throw new CliError('--dry-run applies to bulk revocation (--jti, --user, --client)', EXIT.usage, 'usage');
    const result = await this.revokeOne(token);
    if (!this.jsonEnabled()) this.log(renderRevocation(result));
    return result;
  }

  private async revokeOne(token: string): Promise<RevocationResult> {
    const f = this.flags;
    if (f.url) {
      if (!f['client-id']) throw new CliError('--url needs --client-id: the server authenticates the client', EXIT.usage, 'usage');
      const { remoteRevoke } = await import('../client/remote.js');
      return remoteRevoke({ url: f.url, clientId: f['client-id'], clientSecret: f['client-secret'], ca: f.ca }, token, f.hint);
    }
    assertTokenShape(token);
    return (await this.engine()).revokeAsOperator(token, this.actor());
  }

  private async revokeBulk(): Promise<RevokeBulkResult> {
    const f = this.flags;
    if (f.url) throw new CliError('--url revokes one TOKEN: bulk revocation works on a store (--db)', EXIT.usage, 'usage');
    const selector: BulkSelector =
      f.jti !== undefined ? { jti: f.jti } : f.user !== undefined ? { username: f.user, clientId: f.client } : { clientId: f.client! };
    const engine = await this.engine();
    const matched = await engine.countBulk(selector);
    const base: RevokeBulkResult = { selector: describeSelection(f), matched, revoked: 0, elapsed_ms: 0, dry_run: f['dry-run'] };
    let result = base;
    if (!base.dry_run && matched > 0) {
      await confirmOrStop(bulkQuestion(base.selector, matched), { yes: f.yes, declined: 'Nothing revoked' });
      result = { ...base, ...(await engine.revokeBulk(selector, this.actor())) };
    }
    if (!this.jsonEnabled()) this.log(renderBulkRevocation(result));
    return result;
  }
}
