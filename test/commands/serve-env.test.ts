import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { envName } from '../../src/cli/flags.js';
import Serve from '../../src/commands/serve.js';

/** Contract 6: every `serve` flag can be given as TOKENCTL_<FLAG>, and its help says so. */
describe('serve flags from the environment', () => {
  const flags = { ...Serve.baseFlags, ...Serve.flags } as Record<string, { env?: string }>;

  it('each flag names its variable: TOKENCTL_ and the name, the three older ones unchanged', () => {
    expect(Object.keys(flags).length).toBeGreaterThan(20);
    for (const [name, flag] of Object.entries(flags)) expect(flag.env, name).toBe(envName(name));
    expect(flags.db!.env).toBe('TOKENCTL_DB');
    expect(flags.node!.env).toBe('TOKENCTL_NODE');
    expect(flags.issuer!.env).toBe('TOKENCTL_ISSUER');
    expect(flags['db-timeout']!.env).toBe('TOKENCTL_DB_TIMEOUT');
  });

  it('the help (docs/commands.md, generated from it) shows each variable', () => {
    const doc = readFileSync(new URL('../../docs/commands.md', import.meta.url), 'utf8');
    const serve = doc.slice(doc.indexOf('## `tokenctl serve`'));
    const section = serve.slice(0, serve.indexOf('\n## ', 5));
    for (const name of Object.keys(flags)) expect(section, name).toContain(`env: ${envName(name)}]`);
  });
});
