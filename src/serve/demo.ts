import { existsSync, realpathSync } from 'node:fs';
import { delimiter, isAbsolute, join, relative } from 'node:path';
import { buildSpecAuthorization } from '../engine/client-auth.js';
import type { Engine } from '../engine/engine.js';
import type { TokenResponse } from '../engine/results.js';

export const DEMO_CLIENT_ID = 'demo-client';
export const DEMO_USER = 'demo-user';

export interface DemoSetup {
  clientId: string;
  clientSecret: string;
  tokens: TokenResponse;
}

/**
 * `serve --demo`: the demo client (created, or its secret rotated when it exists, since a stored
 * secret cannot be shown again) and a fresh token pair for a demo user.
 */
export async function prepareDemo(engine: Engine, actor: string): Promise<DemoSetup> {
  const existing = (await engine.listClients()).find((c) => c.client_id === DEMO_CLIENT_ID);
  const { client_secret } = existing
    ? await engine.rotateClientSecret(DEMO_CLIENT_ID, actor)
    : await engine.createClient(
        { id: DEMO_CLIENT_ID, name: 'tokenctl demo client', scope: 'read write', orgId: 'demo-org', audience: 'https://api.example.test' },
        actor,
      );
  const tokens = await engine.issue({ clientId: DEMO_CLIENT_ID, username: DEMO_USER, scope: 'read write' });
  return { clientId: DEMO_CLIENT_ID, clientSecret: client_secret!, tokens };
}

/**
 * Ready-to-paste commands for the three endpoints, built as the spec says: the scenario I
 * Authorization header for /oauth/token (spec part 5), form credentials for the other two.
 * The secret and tokens are printed here once, as at creation.
 */
export function demoInstructions(demo: DemoSetup, url: string, certFile?: string, bin = launcher()): string {
  const https = url.startsWith('https:');
  const curl = https && certFile ? `curl -sS -w '\\n' --cacert '${certFile}'` : https ? "curl -sS -w '\\n' -k" : "curl -sS -w '\\n'";
  const { clientId, clientSecret, tokens } = demo;
  const form = `-d client_id=${clientId} -d client_secret=${clientSecret}`;
  const ca = https && certFile ? ` --ca '${certFile}'` : '';
  const lines = [
    'Demo client and tokens (secrets shown once, as at creation):',
    `  client_id      ${clientId}`,
    `  client_secret  ${clientSecret}`,
    `  access_token   ${tokens.access_token}`,
    `  refresh_token  ${tokens.refresh_token}`,
    '',
    https && certFile ? `The server's certificate is ${certFile} (trust it with --cacert, or use curl -k).` : '',
    '',
    '# Refresh (spec 4.1): Authorization: Basic base64(client_id ":" base64(client_secret))',
    `${curl} ${url}/oauth/token \\`,
    `  -H 'Authorization: ${buildSpecAuthorization(clientId, clientSecret)}' \\`,
    `  -d grant_type=refresh_token -d refresh_token=${tokens.refresh_token}`,
    '',
    '# Introspection (spec 4.3)',
    `${curl} ${url}/oauth/introspection \\`,
    `  -d token=${tokens.access_token} -d token_type_hint=access_token ${form}`,
    '',
    '# The same with tokenctl as the client: it asks for the client_secret above without echo (or reads TOKENCTL_CLIENT_SECRET), keeping it out of ps and shell history',
    `${bin} introspect ${tokens.access_token} --hint access_token --url ${url} --client-id ${clientId}${ca}`,
    '',
    '# Revocation (spec 4.2), last: the access token is revoked afterwards',
    `${curl} ${url}/oauth/revocation \\`,
    `  -d token=${tokens.access_token} -d token_type_hint=access_token ${form}`,
    '',
  ];
  return lines.filter((line, i) => line !== '' || lines[i - 1] !== '').join('\n');
}

/**
 * How the operator can run tokenctl again, as this process was started: `tokenctl` when that
 * name on PATH is this launcher (npm link, a global install), else the launcher's path, relative
 * to the working directory when inside it (`./bin/run.js` after `npm start` in a fresh clone).
 */
export function launcher(script = process.argv[1], cwd = process.cwd(), path = process.env.PATH ?? ''): string {
  if (!script) return 'tokenctl';
  const real = realOrSelf(script);
  for (const dir of path.split(delimiter)) {
    const candidate = dir && join(dir, 'tokenctl');
    if (candidate && existsSync(candidate) && realOrSelf(candidate) === real) return 'tokenctl';
  }
  const rel = relative(cwd, script);
  if (rel.startsWith('..') || isAbsolute(rel)) return shellWord(script);
  return shellWord(`./${rel}`);
}

function realOrSelf(file: string): string {
  try {
    return realpathSync(file);
  } catch {
    return file;
  }
}

/** A path as one shell word: quoted only when it needs to be. */
function shellWord(text: string): string {
  return /^[\w./-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}
