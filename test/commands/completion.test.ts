import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, createClient, tempStore, type TempStore } from '../helpers/cli.js';
import { withoutInheritedSettings } from '../helpers/env.js';

/**
 * Completion of values, in the real shells: the functions `tokenctl completion SHELL` prints are
 * loaded into bash (and zsh when installed), given a line, and asked for candidates, which they
 * get from the built binary on PATH. Only the shells' completion entry points are stood in for
 * (bash's COMP_WORDS set by hand; zsh's compadd, which works only inside a completion widget, as
 * a function that prints what it is given).
 */
let store: TempStore;
let ids: string[];
let home: string;
let path: string;

beforeAll(async () => {
  store = tempStore();
  ids = [(await createClient(store)).id, (await createClient(store)).id];
  home = join(store.dir, 'home');
  const bin = join(store.dir, 'bin');
  mkdirSync(bin, { recursive: true });
  writeFileSync(join(bin, 'tokenctl'), `#!/bin/sh\nexec "${process.execPath}" "${BIN}" "$@"\n`);
  chmodSync(join(bin, 'tokenctl'), 0o755);
  path = `${bin}:${process.env.PATH}`;
  mkdirSync(join(home, '.config/tokenctl'), { recursive: true });
  writeFileSync(join(home, '.config/tokenctl/profiles.json'), JSON.stringify({ profiles: { prod: { url: 'https://auth.example', client_id: 'ops' }, staging: { url: 'https://staging.example', client_id: 'ops' } } }));
}, 60_000);
afterAll(() => store.cleanup());

function shell(program: 'bash' | 'zsh', script: string) {
  const env = { ...withoutInheritedSettings(), PATH: path, HOME: home, XDG_CONFIG_HOME: join(home, '.config'), XDG_DATA_HOME: join(home, 'data'), NO_COLOR: '1' };
  const r = spawnSync(program, ['-c', script], { env, encoding: 'utf8', timeout: 20_000 });
  if (r.status !== 0) throw new Error(`${program} exited ${r.status}: ${r.stderr}`);
  return r.stdout.replace(/\n$/, '').split('\n');
}

const has = (program: string) => spawnSync('sh', ['-c', `command -v ${program}`]).status === 0;

describe('completion of values in bash', () => {
  const ask = (...lines: string[][]) =>
    shell(
      'bash',
      [
        'eval "$(tokenctl completion bash)"',
        // The plugin's own function, which the values function hands all else to.
        '_tokenctl_autocomplete() { COMPREPLY=(from-the-plugin); }',
        't() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); COMPREPLY=(); _tokenctl_values; echo "${COMPREPLY[*]}"; }',
        ...lines.map((words) => `t ${words.map((w) => `'${w}'`).join(' ')}`),
      ].join('\n'),
    );

  it('completes client ids of the store the line names, token states and profile names', () => {
    const [clients, some, states, revoked, argument, profiles] = ask(
      ['tokenctl', 'revoke', '--db', store.db, '--client', ''],
      ['tokenctl', 'token', 'list', '--db', store.db, '--client', ids[0]!.slice(0, -1)],
      ['tokenctl', 'token', 'list', '--state', ''],
      ['tokenctl', 'token', 'list', '--state', 're'],
      ['tokenctl', 'client', 'show', '--db', store.db, ''],
      ['tokenctl', 'introspect', '--profile', ''],
    );
    expect(clients!.split(' ').sort()).toEqual([...ids].sort());
    expect(some!.split(' ')).toContain(ids[0]);
    expect(some!.split(' ')).not.toContain(ids[1]);
    expect(states).toBe('active expired revoked');
    expect(revoked).toBe('revoked');
    expect(argument!.split(' ').sort()).toEqual([...ids].sort());
    expect(profiles).toBe('prod staging');
  });

  it('hands commands, flags and other values to the plugin, and completes nothing from a store that is not there', () => {
    const [command, flag, missing] = ask(['tokenctl', 're'], ['tokenctl', 'revoke', '--u'], ['tokenctl', 'revoke', '--db', join(store.dir, 'none.db'), '--client', '']);
    expect(command).toBe('from-the-plugin');
    expect(flag).toBe('from-the-plugin');
    expect(missing).toBe('');
  });
});

describe.skipIf(!has('zsh'))('completion of values in zsh (skipped without zsh: apt-get install zsh, as .ci/run does)', () => {
  it('completes client ids, states and profile names, and hands the rest on', () => {
    const out = shell(
      'zsh',
      [
        'compdef() { :; }',
        'compadd() { shift; print -r -- "${(j: :)${(P)1}}"; }',
        '_tokenctl() { print -r -- from-the-plugin; }',
        'eval "$(tokenctl completion zsh)"',
        `words=(tokenctl revoke --db '${store.db}' --client ''); CURRENT=6; _tokenctl_values`,
        `words=(tokenctl client show --db '${store.db}' ''); CURRENT=6; _tokenctl_values`,
        "words=(tokenctl token list --state ''); CURRENT=5; _tokenctl_values",
        "words=(tokenctl login --profile ''); CURRENT=4; _tokenctl_values",
        "words=(tokenctl rev); CURRENT=2; _tokenctl_values",
      ].join('\n'),
    );
    expect(out[0]!.split(' ').sort()).toEqual([...ids].sort());
    expect(out[1]!.split(' ').sort()).toEqual([...ids].sort());
    expect(out[2]).toBe('active expired revoked');
    expect(out[3]).toBe('prod staging');
    expect(out[4]).toBe('from-the-plugin');
  });
});

it('without a shell or --values, says what to give, exit 2', () => {
  const r = spawnSync(process.execPath, [BIN, 'completion'], { env: { ...withoutInheritedSettings(), HOME: home }, encoding: 'utf8' });
  expect(r.status).toBe(2);
  expect(r.stderr).toContain('give the shell: tokenctl completion bash');
});
