import { Flags } from '@oclif/core';
import { BaseCommand } from '../cli/base-command.js';
import { CliError, EXIT } from '../cli/errors.js';
import { hintFlag, remoteFlags, tokenShapeProblem } from '../cli/flags.js';
import { isRemote, remoteTarget } from '../cli/remote-target.js';
import { renderInspection, renderIntrospection } from '../cli/render/introspect.js';
import type { IntrospectionResult } from '../cli/render/results.js';
import { resolveToken, tokenArg, tokenFileFlag } from '../cli/token-input.js';

export default class Introspect extends BaseCommand<typeof Introspect> {
  static override storeUse = 'read' as const;
  static override summary = 'Say whether a token is active, and what it is';
  static override description = `Shows the verdict first (ACTIVE, EXPIRED, REVOKED, NOT YET VALID or UNKNOWN) and then what the store knows of the token. With --json it prints exactly the RFC 7662 introspection answer: all twelve fields for an active token, only {"active":false} otherwise (also for a string that is not a tokenctl token, whose reason goes to stderr). Exit code 0 when the token is active, 3 when it is not, 4 when --jti names no token.

The token is never read from stdin unless you say so: give it as - (stdin; a hidden prompt at a terminal) or with --token-file. Surrounding spaces, quotes and a "Bearer " prefix are removed.

With --url (or --profile) the request goes to a server (POST /oauth/introspection) and its answer is shown.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> tca_Xk2…',
    { description: 'By jti, without holding the token', command: '<%= config.bin %> <%= command.id %> --jti 0b6f…' },
    { description: 'In a script: is it still good?', command: 'printf %s "$TOKEN" | <%= config.bin %> <%= command.id %> - --json >/dev/null && echo active' },
    { description: 'Ask a running server, with a saved profile', command: '<%= config.bin %> <%= command.id %> - --profile prod < token.txt' },
  ];

  static override args = { token: tokenArg('The token (tca_… or tcr_…)') };
  static override flags = {
    'token-file': tokenFileFlag,
    hint: hintFlag,
    jti: Flags.string({ description: 'Look the token up by its jti instead' }),
    ...remoteFlags({ clientIdNeedsUrl: true }),
  };

  async run(): Promise<IntrospectionResult> {
    const f = this.flags;
    const token = await resolveToken(this.args.token, f['token-file']);
    if ((token === undefined) === (f.jti === undefined)) throw new CliError('give exactly one of: TOKEN, --jti J', EXIT.usage, 'usage');
    const result = isRemote(f) ? await this.remote(token) : await this.local(token);
    if (!result.active) process.exitCode = EXIT.inactive;
    return result;
  }

  private async remote(token: string | undefined): Promise<IntrospectionResult> {
    const f = this.flags;
    if (token === undefined) throw new CliError('--url introspects a TOKEN: a server is not asked by jti', EXIT.usage, 'usage');
    const target = await remoteTarget(f, this.config.configDir);
    const { remoteIntrospect } = await import('../remote/http-client.js');
    const result = await remoteIntrospect(target, token, f.hint);
    if (!this.jsonEnabled()) this.log(renderIntrospection(result, Date.now()));
    return result;
  }

  private async local(token: string | undefined): Promise<IntrospectionResult> {
    if (this.flags['client-id'] !== undefined || this.flags['client-secret'] !== undefined) {
      throw new CliError('--client-id and --client-secret go with --url or --profile', EXIT.usage, 'usage');
    }
    if (token !== undefined) {
      // Not a tokenctl token: not active (RFC 7662), with the reason on stderr (contract 4).
      const problem = tokenShapeProblem(token);
      if (problem) {
        // On stderr even with --json (oclif's logToStderr is silent then): scripts read stdout.
        process.stderr.write(`Not active: ${problem.message}${problem.hint ? ` (${problem.hint})` : ''}\n`);
        if (!this.jsonEnabled()) this.log('INACTIVE not a tokenctl token');
        return { active: false };
      }
    }
    const engine = await this.engine();
    const inspection = await engine.inspect(token !== undefined ? { token } : { jti: this.flags.jti! });
    if (inspection.verdict === 'unknown' && token === undefined) {
      throw new CliError(`no token with jti ${this.flags.jti} in ${engine.store.location}`, EXIT.notFound, 'not_found', 'tokenctl token list shows the jti of each token');
    }
    if (!this.jsonEnabled()) this.log(renderInspection(inspection, Date.now(), engine.store.location));
    return inspection.verdict === 'unknown' ? { active: false } : inspection.introspection;
  }
}
