import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../cli/base-command.js';
import { CliError, EXIT } from '../cli/errors.js';
import { assertTokenShape, hintFlag, remoteFlags } from '../cli/flags.js';
import { renderInspection, renderIntrospection } from '../cli/render/introspect.js';
import type { IntrospectionResult } from '../cli/render/results.js';

export default class Introspect extends BaseCommand<typeof Introspect> {
  static override storeUse = 'read' as const;
  static override summary = 'Say whether a token is active, and what it is (spec 4.3)';
  static override description = `Shows the verdict first (ACTIVE, EXPIRED, REVOKED, NOT YET VALID or UNKNOWN) and then what the store knows of the token. With --json it prints exactly the introspection result of spec 2.3: all twelve fields for an active token, only {"active":false} otherwise. Exit code 0 when the token is active, 3 when it is not. With --url the request goes to a server (POST /oauth/introspection) and its answer is shown.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> tca_Xk2…',
    { description: 'By jti, without holding the token', command: '<%= config.bin %> <%= command.id %> --jti 0b6f…' },
    { description: 'In a script: is it still good?', command: '<%= config.bin %> <%= command.id %> "$TOKEN" --json >/dev/null && echo active' },
    { description: 'Ask a running server', command: '<%= config.bin %> <%= command.id %> "$TOKEN" --url https://127.0.0.1:8443 --client-id rs-1 --client-secret "$SECRET"' },
  ];

  static override args = { token: Args.string({ description: 'The token (tca_… or tcr_…)' }) };
  static override flags = {
    hint: hintFlag,
    jti: Flags.string({ description: 'Look the token up by its jti instead' }),
    ...remoteFlags({ clientIdNeedsUrl: true }),
  };

  async run(): Promise<IntrospectionResult> {
    const { token } = this.args;
    const f = this.flags;
    if ((token === undefined) === (f.jti === undefined)) throw new CliError('give exactly one of: TOKEN, --jti J', EXIT.usage, 'usage');
    const result = f.url ? await this.remote(f.url, token) : await this.local(token);
    if (!result.active) process.exitCode = EXIT.inactive;
    return result;
  }

  private async remote(url: string, token: string | undefined): Promise<IntrospectionResult> {
    const f = this.flags;
    if (token === undefined) throw new CliError('--url introspects a TOKEN: a server is not asked by jti', EXIT.usage, 'usage');
    if (!f['client-id']) throw new CliError('--url needs --client-id: the server authenticates the client', EXIT.usage, 'usage');
    const { remoteIntrospect } = await import('../client/remote.js');
    const result = await remoteIntrospect({ url, clientId: f['client-id'], clientSecret: f['client-secret'], ca: f.ca }, token, f.hint);
    if (!this.jsonEnabled()) this.log(renderIntrospection(result, Date.now()));
    return result;
  }

  private async local(token: string | undefined): Promise<IntrospectionResult> {
    if (token !== undefined) assertTokenShape(token);
    const engine = await this.engine();
    const inspection = await engine.inspect(token !== undefined ? { token } : { jti: this.flags.jti! });
    if (!this.jsonEnabled()) this.log(renderInspection(inspection, Date.now(), engine.store.location));
    return inspection.verdict === 'unknown' ? { active: false } : inspection.introspection;
  }
}
