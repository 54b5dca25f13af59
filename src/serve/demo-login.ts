import type { Engine } from '../engine/engine.js';
import { launcher } from './demo.js';

/** The public client `serve --demo` registers for trying the authorization code flow from an app. */
export const DEMO_APP_ID = 'demo-app';
/** Any loopback port matches (RFC 8252 §7.3): an app on a developer's machine picks its own. */
export const DEMO_APP_REDIRECT_URIS = ['http://127.0.0.1/callback', 'http://localhost/callback'];

/**
 * `serve --demo` with the development login: the public client `demo-app`, which may use the
 * authorization code flow from any loopback port (created once; kept as it is afterwards).
 */
export async function prepareDemoApp(engine: Engine, actor: string): Promise<void> {
  if ((await engine.listClients()).some((c) => c.client_id === DEMO_APP_ID)) return;
  await engine.createClient(
    { id: DEMO_APP_ID, name: 'tokenctl demo app', public: true, scope: 'read write', orgId: 'demo-org', audience: 'https://api.example.test', redirectUris: DEMO_APP_REDIRECT_URIS },
    actor,
  );
}

/** How to log in from an app against this server: the discovery URL, the client, and one command to try it. */
export function demoLoginInstructions(url: string, certFile?: string, bin = launcher()): string {
  const ca = certFile ? ` --ca '${certFile}'` : '';
  return [
    '# Log in from an app: the authorization code flow with PKCE (the development login takes any user name)',
    `#   issuer:     ${url} (RFC 8414 metadata at /.well-known/oauth-authorization-server)`,
    `#   client_id:  ${DEMO_APP_ID} (public), redirect URI http://127.0.0.1:<any port>/callback`,
    '#   an openid-client app, step by step: docs/login.md',
    `${bin} login --url ${url} --client-id ${DEMO_APP_ID}${ca}`,
    '',
  ].join('\n');
}
