import { describe, expect, it } from 'vitest';
import { tokenctl } from '../helpers/cli.js';

/** Unknown commands: "did you mean", in the README's error format and with --json; version. */
describe('unknown commands and the version', () => {
  it.each([
    [['revok'], 'revok is not a tokenctl command', 'tokenctl revoke'],
    [['instrospect', 'X'], 'instrospect is not a tokenctl command', 'tokenctl introspect'],
    [['client', 'crate', '--name', 'x'], 'client crate is not a tokenctl command', 'tokenctl client create'],
    [['tokn', 'list'], 'tokn is not a tokenctl command', 'tokenctl token list'],
  ])('%j: Error and Hint lines, exit 2', async (args, message, suggestion) => {
    const r = await tokenctl(args);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`Error: ${message}\nHint: did you mean ${suggestion}? (tokenctl --help lists every command)\n`);
  });

  it.each([
    [['client', 'create', 'demo', '--name', 'x'], 'demo'],
    [['client', 'list', 'all'], 'all'],
    [['purge', 'now', '--yes'], 'now'],
    [['purge', 'a:b'], 'a:b'],
    [['client:create', 'demo'], 'demo'],
  ])('%j: a word after a command that takes no argument is an unexpected argument, exit 2', async (args, word) => {
    const r = await tokenctl(args);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`Error: Unexpected argument: ${word}\nHint: see --help for usage and examples\n`);
  });

  it.each(['bash', 'zsh', 'powershell'])('autocomplete %s: the plugin command with its shell, not an unknown command', async (shell) => {
    const r = await tokenctl(['autocomplete', shell]);
    expect(r.stderr).not.toContain('is not a tokenctl command');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`autocomplete script ${shell}`);
  });

  it('autocomplete with an unknown shell: refused by the plugin, naming the shells', async () => {
    const r = await tokenctl(['autocomplete', 'fish']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).not.toContain('is not a tokenctl command');
    expect(r.stderr).toMatch(/fish to be one of: .*bash/);
  });

  it('with --json: one JSON error on stderr', async () => {
    const r = await tokenctl(['revok', '--user', 'x', '--json']);
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stderr)).toEqual({
      error: { code: 'unknown_command', message: 'revok is not a tokenctl command', hint: 'did you mean tokenctl revoke? (tokenctl --help lists every command)' },
    });
  });

  it('tokenctl version, -v and --version', async () => {
    const [cmd, json, short, long] = await Promise.all([tokenctl(['version']), tokenctl(['version', '--json']), tokenctl(['-v']), tokenctl(['--version'])]);
    expect(cmd.code).toBe(0);
    expect(cmd.stdout).toMatch(/^tokenctl \d+\.\d+\.\d+ \(Node\.js v\d+/);
    expect(json.json()).toMatchObject({ version: expect.stringMatching(/^\d+\.\d+\.\d+/), node: process.version });
    // One format: -v and --version are the version command.
    expect(short.code).toBe(0);
    expect(short.stdout).toBe(cmd.stdout);
    expect(long.stdout).toBe(cmd.stdout);
  });
});
