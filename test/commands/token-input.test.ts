import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanToken } from '../../src/cli/token-input.js';
import { BIN, createClient, hasScript, issue, stripAnsi, tempStore, tokenctlInTerminal, type IssuedTokens, type TempStore } from '../helpers/cli.js';

/** stdin is read only when asked (`-` or --token-file); pasted tokens are cleaned. */
describe('where a token comes from', () => {
  let store: TempStore;
  let clientId: string;
  let t: IssuedTokens;
  beforeAll(async () => {
    store = tempStore();
    clientId = (await createClient(store)).id;
    t = await issue(store, clientId, 'alice');
    await Promise.all(['bob', 'carol', 'dave'].map((u) => issue(store, clientId, u)));
  });
  afterAll(() => store.cleanup());

  it('a `while read` loop over a file revokes every user: no command swallows the loop’s stdin', () => {
    const users = join(store.dir, 'users.txt');
    writeFileSync(users, 'bob\ncarol\ndave\n');
    const script = `while read u; do "$0" "$1" revoke --user "$u" --yes --db "$2" || echo "failed $u"; done < "$3"`;
    const r = spawnSync('sh', ['-c', script, process.execPath, BIN, store.db, users], { encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' }, timeout: 30_000 });
    expect(r.stdout).not.toMatch(/failed/);
    expect(r.stdout.match(/^Revoked 2 tokens \(user \w+\)/gm)?.map((l) => l.split('(')[1])).toEqual(['user bob)', 'user carol)', 'user dave)']);
  });

  it('a bare command with data on stdin does not take it as the token', async () => {
    const r = await store.run(['introspect', '--json'], { input: `${t.access_token}\n` });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/give exactly one of: TOKEN, --jti J/);
  });

  it('- reads the token from stdin, --token-file from a file; both cleaned', async () => {
    const file = join(store.dir, 'token.txt');
    writeFileSync(file, `  "Bearer ${t.access_token}"\r\n`);
    const [fromStdin, fromFile, twoLines, both] = await Promise.all([
      store.run(['introspect', '-', '--json'], { input: `${t.access_token}\n` }),
      store.run(['introspect', '--token-file', file, '--json']),
      store.run(['introspect', '-', '--json'], { input: `${t.access_token}\n${t.refresh_token}\n` }),
      store.run(['introspect', t.access_token, '--token-file', file]),
    ]);
    expect(fromStdin.code, fromStdin.stderr).toBe(0);
    expect(fromStdin.json().jti).toBe(t.jti);
    expect(fromFile.code, fromFile.stderr).toBe(0);
    expect(fromFile.json().jti).toBe(t.jti);
    expect(twoLines.code).toBe(2);
    expect(twoLines.stderr).toMatch(/stdin holds 2 lines: give one token/);
    expect(both.code).toBe(2);
  });

  it.each([
    ['surrounding spaces', (x: string) => `  ${x} `],
    ['a newline', (x: string) => `${x}\n`],
    ['double quotes', (x: string) => `"${x}"`],
    ['single quotes', (x: string) => `'${x}'`],
    ['a Bearer prefix', (x: string) => `Bearer ${x}`],
    ['an Authorization header', (x: string) => `Authorization: Bearer ${x}`],
  ])('a pasted token with %s is cleaned', (_what, wrap) => {
    expect(cleanToken(wrap('tca_' + 'a'.repeat(43)))).toBe('tca_' + 'a'.repeat(43));
  });

  it('a pasted token with a space or a quote inside, or cut short: the error says which', async () => {
    const [space, short] = await Promise.all([
      store.run(['revoke', `${t.access_token.slice(0, 20)} ${t.access_token.slice(20)}`]),
      store.run(['revoke', t.access_token.slice(0, 30)]),
    ]);
    expect(space.code).toBe(2);
    expect(space.stderr).toMatch(/contains whitespace inside it/);
    expect(short.code).toBe(2);
    expect(short.stderr).toMatch(/26 characters after its prefix instead of 43/);
  });

  it('TOKENCTL_DEBUG shows the stack without the token', async () => {
    const unknown = 'tcr_' + 'Q'.repeat(43);
    const r = await store.run(['refresh', unknown], { env: { TOKENCTL_DEBUG: '1' } });
    expect(r.code).toBe(4);
    expect(r.stderr).toMatch(/\n\s+at /); // a trace is there
    expect(r.stderr).not.toContain(unknown);
    expect(r.stderr).not.toContain('Q'.repeat(20));
  });
});

describe.skipIf(!hasScript())('a token typed at a terminal', () => {
  let store: TempStore;
  let t: IssuedTokens;
  beforeAll(async () => {
    store = tempStore();
    t = await issue(store, (await createClient(store)).id, 'alice');
  });
  afterAll(() => store.cleanup());

  it('- at a terminal asks without echo', async () => {
    const run = await tokenctlInTerminal(['introspect', '-', '--db', store.db], { answers: [{ when: /Token \(not echoed\):/, send: `${t.access_token}\r` }] });
    const output = stripAnsi(run.output);
    expect(run.code).toBe(0);
    expect(output).toMatch(/ACTIVE/);
    expect(output).not.toContain(t.access_token.slice(4, 20));
  });
});
