import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, tempStore, tokenctl, type CliResult, type TempStore } from '../helpers/cli.js';
import { runCommand } from '../helpers/run-command.js';

/**
 * The in-process runner (test/helpers/run-command.ts), which most command tests use, against the
 * binary: the same output, the same exit code, for a success, a human and a --json error, an
 * oclif parse error and an exit code set without an error (introspect of an unknown token).
 */
describe.skipIf(process.env.TOKENCTL_TEST_BINARY)('commands in-process and as the binary', () => {
  let store: TempStore;
  let clientId: string;
  beforeAll(async () => {
    store = tempStore();
    clientId = (await createClient(store)).id;
  });
  afterAll(() => store.cleanup());

  const cases: [string, number, () => string[]][] = [
    ['client show, human', 0, () => ['client', 'show', clientId]],
    ['client list --json', 0, () => ['client', 'list', '--json']],
    ['a missing client, human', 4, () => ['client', 'show', 'ghost']],
    ['a missing client, --json', 4, () => ['client', 'show', 'ghost', '--json']],
    ['an unknown flag', 2, () => ['client', 'list', '--frobnicate']],
    ['an unknown token', 3, () => ['introspect', `tca_${'A'.repeat(43)}`, '--json']],
  ];
  const seen = (r: CliResult) => ({ code: r.code, stdout: r.stdout.replace(/\((now|in [^)]*|[^)]* ago)\)/g, '(…)'), stderr: r.stderr });

  it.each(cases)('%s: exit %i', async (_name, code, args) => {
    const argv = [...args(), '--db', store.db];
    const [inProcess, binary] = [await runCommand(argv), await tokenctl(argv)];
    expect(inProcess.code).toBe(code);
    expect(seen(inProcess)).toEqual(seen(binary));
  });
});
