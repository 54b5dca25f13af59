import { Flags } from '@oclif/core';
import { BaseCommand } from '../cli/base-command.js';
import { CliError, EXIT } from '../cli/errors.js';
import { assertTokenShape, dryRunFlag, hintFlag, remoteFlags, yesFlag } from '../cli/flags.js';
import { interruptible } from '../cli/progress.js';
import { progressBar } from '../cli/render/progress.js';
import { isRemote, remoteTarget } from '../cli/remote-target.js';
import { resolveToken, tokenArg, tokenFileFlag } from '../cli/token-input.js';
import { confirmOrStop } from '../cli/prompts.js';
import type { LocalRevocationResult, RevocationResult, RevokeBulkResult } from '../cli/render/results.js';
import { bulkQuestion, describeSelection, renderBulkRevocation, renderRevocation } from '../cli/render/revoke.js';
import type { BulkSelector } from '../store/store.js';

export default class Revoke extends BaseCommand<typeof Revoke> {
  static override summary = 'Revoke a token, or in bulk every active token of a jti, a user or a client';
  static override description = `With TOKEN: revokes that token and prints the result a client receives (code token_revoke_success, token_already_revoked or token_invalid, and a message); revoking a refresh token also revokes the access tokens of its grant.

The token is never read from stdin unless you say so: give it as - (stdin; a hidden prompt at a terminal) or with --token-file, so that it stays out of shell history and ps. Surrounding spaces, quotes and a "Bearer " prefix are removed.

In bulk (--jti, --user [--client], --client): shows how many active tokens are selected and asks for confirmation. Without a terminal it refuses unless --yes is given; --dry-run only shows. A user or client that never had a token here is an error (exit 4: a typo?); one whose tokens are all revoked or expired is not (exit 0, nothing to revoke). On a terminal it draws a progress bar on stderr while it runs. Ctrl-C or SIGTERM during a bulk revocation stops it between batches, says how many were revoked, and exits 130.

With --url (or --profile) the single revocation goes to a server (POST /oauth/revocation).`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> tca_Xk2…',
    { description: 'Log a user out everywhere', command: '<%= config.bin %> <%= command.id %> --user alice --yes' },
    { description: 'How many tokens of a client would go', command: '<%= config.bin %> <%= command.id %> --client web-shop-1a2b3c4d --dry-run' },
    { description: 'A token kept in a file, out of shell history', command: '<%= config.bin %> <%= command.id %> --token-file leaked.txt' },
    { description: 'Against a running server, as a client (the secret from the environment)', command: 'TOKENCTL_CLIENT_SECRET=… <%= config.bin %> <%= command.id %> - --url https://127.0.0.1:8443 --client-id web-shop-1a2b3c4d < token.txt' },
  ];

  static override args = { token: tokenArg('The token to revoke (tca_… or tcr_…)') };
  static override flags = {
    'token-file': tokenFileFlag,
    hint: hintFlag,
    jti: Flags.string({ description: 'Revoke the token with this jti (and, for a refresh token, its grant)', exclusive: ['user', 'client'], helpGroup: 'BULK' }),
    user: Flags.string({ char: 'u', description: 'Revoke every active token of this user (narrow with --client)', helpGroup: 'BULK' }),
    client: Flags.string({ char: 'c', description: 'Revoke every active token of this client', helpGroup: 'BULK' }),
    yes: yesFlag,
    'dry-run': dryRunFlag,
    'batch-size': Flags.integer({ description: 'Bulk: tokens (SQLite) or grants (PostgreSQL) revoked per store transaction', default: 5000, min: 1, max: 100_000, helpValue: '<n>', helpGroup: 'BULK' }),
    ...remoteFlags({ clientIdNeedsUrl: true }),
  };

  async run(): Promise<RevocationResult | RevokeBulkResult> {
    const f = this.flags;
    const token = await resolveToken(this.args.token, f['token-file']);
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

  private async revokeOne(token: string): Promise<RevocationResult | LocalRevocationResult> {
    const f = this.flags;
    if (isRemote(f)) {
      const target = await remoteTarget(f, this.config.configDir);
      const { remoteRevoke } = await import('../remote/http-client.js');
      return remoteRevoke(target, token, f.hint);
    }
    if (f['client-id'] !== undefined || f['client-secret'] !== undefined) throw new CliError('--client-id and --client-secret go with --url or --profile', EXIT.usage, 'usage');
    assertTokenShape(token);
    const result = await (await this.engine()).revokeAsOperator(token, this.actor());
    return { ...result, store: await this.storeName() };
  }

  private async revokeBulk(): Promise<RevokeBulkResult> {
    const f = this.flags;
    if (isRemote(f)) {
      const via = f.url !== undefined ? '--url' : `the profile ${f.profile} (--profile or TOKENCTL_PROFILE)`;
      throw new CliError(`with ${via} revoke sends one TOKEN to a server: bulk revocation works on a store (--db)`, EXIT.usage, 'usage', f.url === undefined ? 'unset TOKENCTL_PROFILE to work on the store' : undefined);
    }
    const selector: BulkSelector =
      f.jti !== undefined ? { jti: f.jti } : f.user !== undefined ? { username: f.user, clientId: f.client } : { clientId: f.client! };
    const engine = await this.engine();
    const matched = await engine.countBulk(selector);
    const base: RevokeBulkResult = { selector: describeSelection(f), store: engine.store.location, matched, revoked: 0, elapsed_ms: 0, dry_run: f['dry-run'] };
    let result = base;
    if (matched === 0 && !('jti' in selector)) await this.neverHadTokens(selector);
    if (!base.dry_run && matched > 0) {
      await confirmOrStop(bulkQuestion(base.selector, matched), { yes: f.yes, declined: 'Nothing revoked' });
      const line = this.jsonEnabled() ? undefined : (n: number) => progressBar(n, Math.max(n, matched), 'revoked');
      const done = await interruptible(line, ({ signal, onProgress }) => engine.revokeBulk(selector, this.actor(), { signal, onProgress, batchSize: f['batch-size'] }));
      result = { ...base, revoked: done.revoked, elapsed_ms: done.elapsed_ms, interrupted: done.interrupted };
    }
    if (!this.jsonEnabled()) this.log(renderBulkRevocation(result));
    if (result.interrupted) process.exitCode = EXIT.interrupted;
    return result;
  }

  /**
   * Nothing active to revoke: fine when the user or client has tokens (all revoked or expired),
   * an error when it never had any here, which is what a mistyped name looks like.
   */
  private async neverHadTokens(selector: BulkSelector): Promise<void> {
    const engine = await this.engine();
    const filter = 'username' in selector ? { username: selector.username, clientId: selector.clientId } : { clientId: (selector as { clientId: string }).clientId };
    if ((await engine.listTokens({ ...filter, limit: 1 })).length > 0) return;
    const who = describeSelection(this.flags);
    throw new CliError(`${who} has no tokens in ${engine.store.location}: none was ever issued here, or all were purged`, EXIT.notFound, 'no_tokens', 'check the spelling (tokenctl token list shows who has tokens)');
  }
}
