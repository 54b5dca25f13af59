import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, tokenctl } from '../helpers/cli.js';

const COMMANDS = [
  'client create',
  'client list',
  'client show',
  'client delete',
  'client rotate-secret',
  'token issue',
  'token list',
  'refresh',
  'revoke',
  'introspect',
  'purge',
  'status',
  'audit',
];

describe('help', () => {
  it('the build writes a manifest naming every command, so commands load lazily', () => {
    const manifest = JSON.parse(readFileSync(join(ROOT, 'oclif.manifest.json'), 'utf8')) as { commands: Record<string, { flags: Record<string, unknown> }> };
    for (const id of COMMANDS) {
      const entry = manifest.commands[id.replace(' ', ':')];
      expect(entry, id).toBeDefined();
      expect(entry!.flags, id).toHaveProperty('json');
      expect(entry!.flags, id).toHaveProperty('db');
    }
  });

  it.concurrent.each(COMMANDS)('%s --help exits 0 and shows a description, the flags and an example', async (id) => {
    const r = await tokenctl([...id.split(' '), '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^USAGE\n\s+\$ tokenctl /m);
    expect(r.stdout).toMatch(/^DESCRIPTION\n/m);
    expect(r.stdout).toMatch(/^EXAMPLES\n[\s\S]*\$ tokenctl /m);
    expect(r.stdout).toContain('--json');
    expect(r.stdout).toContain('--db');
  });

  it('login --help says what it needs of the client and of the server, and has no --db', async () => {
    const r = await tokenctl(['login', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^USAGE\n\s+\$ tokenctl login /m);
    expect(r.stdout).toMatch(/^EXAMPLES\n[\s\S]*\$ tokenctl login --url /m);
    expect(r.stdout).toContain('http://127.0.0.1/callback');
    expect(r.stdout).toMatch(/serve\s+--login-url\s+URL,\s+--dev-login\s+or\s+--demo/);
    expect(r.stdout).toMatch(/--timeout=<duration>\s+Give\s+up\s+when\s+the\s+login\s+has\s+not\s+come\s+back\s+within\s+this\s+time\s+\[default:\s+5m\]/);
    for (const flag of ['--url', '--client-id', '--scope', '--ca', '--port', '--no-browser', '--json']) expect(r.stdout).toContain(flag);
    expect(r.stdout).not.toContain('--db');
  });

  it('the root help lists the topics and commands', async () => {
    const r = await tokenctl(['--help']);
    expect(r.code).toBe(0);
    for (const word of ['client', 'token', 'refresh', 'revoke', 'introspect', 'purge', 'status', 'audit']) expect(r.stdout).toContain(word);
  });

  it('`help COMMAND` and `-h` show the same help as --help', async () => {
    const [flag, word, short, topic] = await Promise.all([
      tokenctl(['revoke', '--help']),
      tokenctl(['help', 'revoke']),
      tokenctl(['revoke', '-h']),
      tokenctl(['help', 'client', 'create']),
    ]);
    expect(flag.code).toBe(0);
    expect(word).toMatchObject({ code: 0, stdout: flag.stdout });
    expect(short).toMatchObject({ code: 0, stdout: flag.stdout });
    expect(topic.code).toBe(0);
    expect(topic.stdout).toMatch(/^USAGE\n\s+\$ tokenctl client create /m);
  });

  it('an unknown command or flag is a usage error (2)', async () => {
    const [command, flag] = await Promise.all([tokenctl(['frobnicate']), tokenctl(['status', '--frob'])]);
    expect(command.code).toBe(2);
    expect(flag.code).toBe(2);
    expect(flag.stderr).toMatch(/--frob/);
  });
});
