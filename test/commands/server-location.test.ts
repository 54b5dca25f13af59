import { describe, expect, it } from 'vitest';
import { runCommand } from '../helpers/run-command.js';

/**
 * An empty --url or --profile (what `--url "$SERVER"` gives when the variable is unset) is named
 * as such, before the command asks for a client or sends anything.
 */
describe('an empty server location', () => {
  for (const command of ['introspect', 'revoke', 'refresh']) {
    it(`${command} --url "" says the URL is empty, exit 2`, async () => {
      const r = await runCommand([command, 'some-token', '--url', '']);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(/^Error: --url is empty: it names no server, so nothing was sent\nHint: give the server's base URL/);
    });
  }

  it('--profile "" says the profile name is empty, exit 2', async () => {
    const r = await runCommand(['introspect', 'some-token', '--profile', ' ']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^Error: --profile is empty: it names no profile, so nothing was sent\n/);
  });

  it('an empty --url with --client-id given is still named as the empty URL', async () => {
    const r = await runCommand(['revoke', 'some-token', '--url', '', '--client-id', 'x']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--url is empty');
  });
});
