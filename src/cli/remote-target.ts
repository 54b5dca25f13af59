import type { RemoteOptions } from '../remote/http-client.js';
import { CliError, EXIT } from './errors.js';
import { getProfile, profileSecret } from './profiles.js';
import { givenSecrets, promptHidden, type SecretPrompt } from './token-input.js';

/** The `--url` flags of refresh, revoke and introspect (see remoteFlags). */
export interface RemoteFlagValues {
  url?: string;
  profile?: string;
  'client-id'?: string;
  'client-secret'?: string;
  ca?: string;
  timeout?: number;
}

export const DEFAULT_REMOTE_TIMEOUT_MS = 10_000;

/** Whether the command talks to a server (--url or a profile) rather than to a store. */
export function isRemote(f: RemoteFlagValues): boolean {
  return f.url !== undefined || f.profile !== undefined;
}

/**
 * Where to send the request and as whom: flags first, then the profile (--profile or
 * TOKENCTL_PROFILE). The client secret: --client-secret, else TOKENCTL_CLIENT_SECRET, else what
 * the profile names, else a prompt without echo when stdin is a terminal (empty: a public client).
 */
export async function remoteTarget(f: RemoteFlagValues, configDir: string, prompt: SecretPrompt = promptHidden, secretFromEnv = true): Promise<RemoteOptions> {
  // An empty --url is what `--url "$SERVER"` gives when the variable is unset: say that, before
  // asking for the client that a server would authenticate.
  if (f.url !== undefined && f.url.trim() === '') {
    throw new CliError('--url is empty: it names no server, so nothing was sent', EXIT.usage, 'usage', "give the server's base URL, e.g. --url https://auth.example.com (is the variable you meant to pass set?)");
  }
  if (f.profile !== undefined && f.profile.trim() === '') {
    throw new CliError('--profile is empty: it names no profile, so nothing was sent', EXIT.usage, 'usage', 'give a profile name (see tokenctl profile list), or --url with --client-id');
  }
  const profile = f.profile === undefined ? undefined : getProfile(configDir, f.profile);
  const url = f.url ?? profile?.url;
  if (url === undefined) throw new CliError('no server to talk to: give --url or --profile', EXIT.usage, 'usage');
  const clientId = f['client-id'] ?? profile?.client_id;
  if (!clientId) throw new CliError('--url needs --client-id: the server authenticates the client', EXIT.usage, 'usage', 'or save both in a profile: tokenctl profile add');
  let secret: string | null | undefined = f['client-secret'] ?? ((secretFromEnv && process.env.TOKENCTL_CLIENT_SECRET) || undefined);
  if (secret === undefined && profile && f['client-id'] === undefined) secret = profileSecret(f.profile!, profile);
  if (secret === undefined && process.stdin.isTTY) {
    secret = (await prompt(`Client secret of ${clientId} (not echoed; Enter for a public client):`)) || null;
  }
  if (secret) givenSecrets.add(secret);
  return { url, clientId, clientSecret: secret ?? undefined, ca: f.ca ?? profile?.ca, timeoutMs: f.timeout ?? DEFAULT_REMOTE_TIMEOUT_MS };
}
