import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, hasScript, issue, stripAnsi, tempStore, tokenctlInTerminal, type TempStore } from '../helpers/cli.js';

/**
 * What a person at a terminal sees: the confirmation prompt (answered no, then yes) and colours.
 * Runs tokenctl under a real pseudo-terminal through util-linux `script`.
 */
describe.skipIf(!hasScript())('at a terminal', () => {
  let store: TempStore;
  let client: string;
  beforeAll(async () => {
    store = tempStore();
    ({ id: client } = await createClient(store));
    await Promise.all([issue(store, client, 'alice'), issue(store, client, 'alice')]);
  });
  afterAll(() => store.cleanup());

  const activeOfAlice = async () => (await store.json<{ tokens: unknown[] }>(['token', 'list', '--user', 'alice', '--state', 'active'])).tokens.length;
  const question = /Revoke 4 active tokens \(user alice\)\? \(y\/N\)/;

  it('answering "no" to the bulk revocation prompt changes nothing and exits 5', async () => {
    const r = await tokenctlInTerminal(['revoke', '--user', 'alice', '--db', store.db], { answers: [{ when: question, send: 'n\r' }] });
    expect(stripAnsi(r.output)).toMatch(question);
    expect(r.output).toMatch(/Nothing revoked/);
    expect(r.code).toBe(5);
    expect(await activeOfAlice()).toBe(4);
  });

  it('answering "yes" revokes, and the summary follows', async () => {
    const r = await tokenctlInTerminal(['revoke', '--user', 'alice', '--db', store.db], { answers: [{ when: question, send: 'y\r' }] });
    expect(r.code).toBe(0);
    expect(stripAnsi(r.output)).toMatch(/Revoked 4 tokens \(user alice\) in \d+ ms\./);
    expect(await activeOfAlice()).toBe(0);
  });

  it('colours states on a terminal, and NO_COLOR turns them off', async () => {
    const [coloured, plain] = await Promise.all([
      // A person at a terminal: not CI's environment, where chalk turns colour off on purpose.
      tokenctlInTerminal(['token', 'list', '--db', store.db], { env: { NO_COLOR: undefined, CI: undefined } }),
      tokenctlInTerminal(['token', 'list', '--db', store.db], { env: { NO_COLOR: '1', CI: undefined } }),
    ]);
    expect(coloured.code).toBe(0);
    expect(coloured.output).toContain('\u001b[31mrevoked'); // revoked in red
    expect(plain.output).not.toContain('\u001b[3');
    expect(stripAnsi(coloured.output)).toBe(plain.output);
  });
});

describe.skipIf(!hasScript())('purge at a terminal', () => {
  let store: TempStore;
  beforeAll(async () => {
    store = tempStore();
    const { id } = await createClient(store);
    await Promise.all([issue(store, id, 'a'), issue(store, id, 'b'), issue(store, id, 'c')]);
    await store.json(['revoke', '--client', id, '--yes']);
  });
  afterAll(() => store.cleanup());

  it('draws a progress bar on stderr and ends with a summary', async () => {
    const r = await tokenctlInTerminal(['purge', '--yes', '--batch-size', '2', '--db', store.db]);
    expect(r.code).toBe(0);
    expect(r.output).toMatch(/\r\[#+-*\]\s+\d+%\s+\d+\/6 deleted/);
    expect(stripAnsi(r.output)).toMatch(/Purged 6 tokens expired or revoked before .* in \d+(\.\d)? m?s\./);
  });
});

describe.skipIf(!hasScript())('bulk revocation at a terminal', () => {
  let store: TempStore;
  let client: string;
  beforeAll(async () => {
    store = tempStore();
    ({ id: client } = await createClient(store));
    await Promise.all([issue(store, client, 'a'), issue(store, client, 'b'), issue(store, client, 'c')]);
  });
  afterAll(() => store.cleanup());

  it('draws a progress bar on stderr, as purge does, and ends with the summary and the store', async () => {
    const r = await tokenctlInTerminal(['revoke', '--client', client, '--yes', '--batch-size', '2', '--db', store.db]);
    expect(r.code).toBe(0);
    expect(r.output).toMatch(/\r\[#+-*\]\s+\d+%\s+\d+\/6 revoked/);
    expect(stripAnsi(r.output)).toMatch(/Revoked 6 tokens \(client \S+\) in \d+(\.\d)? m?s\.\r?\nStore: /);
  });
});

describe.skipIf(!hasScript())('the confirmation prompt and colour', () => {
  let store: TempStore;
  beforeAll(async () => {
    store = tempStore();
    const { id } = await createClient(store);
    await issue(store, id, 'dana');
  });
  afterAll(() => store.cleanup());

  // A colour or style, not the cursor controls the prompt also writes.
  const sgr = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`);
  const ask = (env: Record<string, string | undefined>) =>
    tokenctlInTerminal(['revoke', '--user', 'dana', '--db', store.db], { env, answers: [{ when: /Revoke 2 active tokens/, send: 'n\r' }] });

  it('is plain under CI, as the rest of the output is; coloured at a plain terminal', async () => {
    // Inside tmux, Node tells @inquirer there are colours even under CI, where chalk says none.
    const tmux = '/tmp/tmux-1000/default,1,0';
    const [ci, person] = await Promise.all([ask({ NO_COLOR: undefined, CI: '1', TMUX: tmux }), ask({ NO_COLOR: undefined, CI: undefined, TMUX: tmux })]);
    expect(ci.code).toBe(5);
    expect(stripAnsi(ci.output)).toMatch(/\? Revoke 2 active tokens \(user dana\)\? \(y\/N\)/);
    expect(ci.output).not.toMatch(sgr);
    expect(person.code).toBe(5);
    expect(person.output).toMatch(sgr);
  });
});
