import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';

/**
 * What a newcomer pastes: the README's tour, in order, and every command `serve --demo` prints,
 * run by bash as printed, in a directory that has what a clone has after `npm install` (bin/,
 * reached as ./bin/run.js), with an empty HOME (so a new default store) and no tokenctl on PATH.
 * The one change to what is printed: the demo listens on a free port instead of 8443.
 */
describe.skipIf(spawnSync('curl', ['--version']).status !== 0)('a fresh clone: the README tour and the demo, as pasted', () => {
  let clone: string;
  let home: string;
  let server: ChildProcess | undefined;
  let printed = '';
  let url = '';

  const env = (): NodeJS.ProcessEnv => {
    const e: NodeJS.ProcessEnv = { ...process.env, HOME: home, NO_COLOR: '1', PATH: `${join(clone, 'no-tokenctl')}${delimiter}${process.env.PATH ?? ''}` };
    for (const key of Object.keys(e)) if (key.startsWith('TOKENCTL_') || key.startsWith('XDG_') || key === 'NODE_OPTIONS') delete e[key];
    return e;
  };

  /** Runs `script` in one bash, line by line, and returns each line's exit code with what it printed. */
  const paste = (lines: string[], extra: NodeJS.ProcessEnv = {}) => {
    const script = lines.map((line, i) => `${line}\necho "__rc ${i} $?" >&2`).join('\n');
    const r = spawnSync('bash', ['-c', script], { cwd: clone, env: { ...env(), ...extra }, encoding: 'utf8', timeout: 120_000 });
    const codes = [...r.stderr.matchAll(/^__rc (\d+) (\d+)$/gm)].map((m) => ({ line: lines[Number(m[1])]!, code: Number(m[2]) }));
    return { codes, stdout: r.stdout, stderr: r.stderr };
  };

  /** The login lines' browser: a script that signs in on the development page, trusting the demo's certificate. */
  const browserFor = (demoOutput: string): NodeJS.ProcessEnv => {
    const file = join(clone, 'fake-browser.sh');
    writeFileSync(file, `#!/bin/sh\ncd '${ROOT}' && exec '${process.execPath}' --import tsx '${join(ROOT, 'test/helpers/fake-browser.ts')}' "$@"\n`, { mode: 0o755 });
    return { BROWSER: file, CI: '', NODE_EXTRA_CA_CERTS: /--cacert '([^']+)'/.exec(demoOutput)![1]!, FAKE_BROWSER_USER: 'pat' };
  };

  beforeAll(async () => {
    clone = mkdtempSync(join(tmpdir(), 'tokenctl-clone-'));
    home = join(clone, 'home');
    mkdirSync(home);
    symlinkSync(join(ROOT, 'bin'), join(clone, 'bin'));
    // A fresh clone has no tokenctl on PATH: one that fails stands first, whatever else is installed.
    mkdirSync(join(clone, 'no-tokenctl'));
    writeFileSync(join(clone, 'no-tokenctl', 'tokenctl'), '#!/bin/sh\necho "tokenctl: command not found" >&2\nexit 127\n', { mode: 0o755 });
    // npm start, on a free port: serve --demo in the clone, on the default store.
    server = spawn(process.execPath, ['bin/run.js', 'serve', '--demo', '--port', '0'], { cwd: clone, env: env(), stdio: ['ignore', 'pipe', 'pipe'] });
    await new Promise<void>((resolve, reject) => {
      server!.stdout!.setEncoding('utf8').on('data', (d: string) => {
        printed += d;
        const m = /^listening on (\S+)$/m.exec(printed);
        if (m) {
          url = m[1]!;
          resolve();
        }
      });
      server!.on('exit', (code) => reject(new Error(`serve --demo exited ${code}:\n${printed}`)));
    });
  });

  afterAll(() => {
    server?.kill('SIGINT');
    if (clone) rmSync(clone, { recursive: true, force: true });
  });

  it('every command serve --demo prints runs as printed, in order: ./bin/run.js, no --client-secret', () => {
    const blocks = printed
      .split('\n\n')
      .map((b) => b.split('\n').filter((l) => !l.startsWith('#')).join('\n'))
      .filter((b) => /^(curl|\.\/bin\/run\.js) /.test(b));
    expect(blocks.map((b) => b.split(' ')[0])).toEqual(['curl', 'curl', './bin/run.js', 'curl', './bin/run.js']);
    expect(blocks[4]).toMatch(/^\.\/bin\/run\.js login --url /);
    expect(printed).not.toMatch(/^tokenctl /m);
    expect(printed).not.toContain('--client-secret');
    const secret = /client_secret\s+(\S+)/.exec(printed)![1]!;
    // No terminal for the prompt: the secret from the environment, as the printed comment offers.
    const r = paste(blocks.map((b) => b.replace(/\\\n\s*/g, '')), { TOKENCTL_CLIENT_SECRET: secret, ...browserFor(printed) });
    expect(r.codes, r.stderr).toEqual(blocks.map((b) => ({ line: b.replace(/\\\n\s*/g, ''), code: 0 })));
    expect(r.stdout).toMatch(/"token_type":"bearer"/);
    expect(r.stdout).toMatch(/ACTIVE/);
    expect(r.stdout).toMatch(/"code":"token_revoke_success"/);
    // The login line: a real login on the development page, the tokens printed.
    expect(r.stdout).toMatch(/tca_/);
  });

  it("the README tour runs as pasted, in order, every line exit 0 (the server's port aside)", () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const tour = /## A tour\n[\s\S]*?```sh\n([\s\S]*?)```/.exec(readme)![1]!;
    const lines = tour.split('\n').filter((l) => l.trim() !== '' && !l.trimStart().startsWith('#'));
    expect(lines.length).toBeGreaterThan(20);
    expect(lines.filter((l) => /^tokenctl\b/.test(l))).toEqual([]); // not on a fresh clone's PATH
    expect(lines.filter((l) => l.includes('--client-secret'))).toEqual([]);
    expect(tour).toContain('https://127.0.0.1:8443');
    const secret = /client_secret\s+(\S+)/.exec(printed)![1]!;
    const r = paste(
      lines.map((l) => l.replaceAll('https://127.0.0.1:8443', url)),
      { TOKENCTL_CLIENT_SECRET: secret, ...browserFor(printed) },
    );
    expect(r.codes.filter((c) => c.code !== 0), r.stderr).toEqual([]);
    expect(r.codes).toHaveLength(lines.length);
    expect(r.stdout).toMatch(/Revoked 2 tokens \(user alice\)/);
    expect(r.stdout).toMatch(/^Added poll receiver orders-api$/m);
    // The last line: the server's introspection of bob's new token, as demo-client.
    expect(r.stdout).toMatch(new RegExp(`ACTIVE [^\\n]*\\n(.*\\n)*username: +bob\\n(.*\\n)*iss: +${url.replace(/[.]/g, '\\.')}\\n`));
    expect(existsSync(join(home, '.local/share/tokenctl/tokens.db'))).toBe(true);
  });
});
