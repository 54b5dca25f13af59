import { appendFileSync } from 'node:fs';
import { devLogin } from './browser.js';

/**
 * A `$BROWSER` for tests of `tokenctl login` (test/commands/login.test.ts): started with the
 * authorization URL, it goes through the development login as FAKE_BROWSER_USER, or cancels
 * with FAKE_BROWSER_DENY=1, and appends what happened to FAKE_BROWSER_LOG.
 */
const log = (line: string) => process.env.FAKE_BROWSER_LOG && appendFileSync(process.env.FAKE_BROWSER_LOG, `${line}\n`);
try {
  const outcome = await devLogin(process.argv[2]!, { username: process.env.FAKE_BROWSER_USER, deny: process.env.FAKE_BROWSER_DENY === '1' });
  log(`${outcome.status} ${outcome.page.replace(/\s+/g, ' ')}`);
} catch (err) {
  log(`error ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
}
