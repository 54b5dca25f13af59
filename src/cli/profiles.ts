import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { CliError, EXIT } from './errors.js';

/**
 * Named profiles for the `--url` client (as kcadm, hydra and gh keep theirs): a server's base
 * URL, the client to authenticate as, the CA to trust, and where the client secret comes from.
 * Kept in `profiles.json` in the tokenctl config directory (~/.config/tokenctl), mode 0600.
 */
export interface Profile {
  url: string;
  client_id: string;
  ca?: string;
  /**
   * Where the secret comes from: kept in this file, an environment variable, a file, or none
   * (a public client). Absent: TOKENCTL_CLIENT_SECRET, else a prompt at a terminal.
   */
  secret?: { stored: string } | { env: string } | { file: string } | { none: true };
}

interface ProfileFile {
  profiles: Record<string, Profile>;
}

export const PROFILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export function profilesPath(configDir: string): string {
  return join(configDir, 'profiles.json');
}

export function readProfiles(configDir: string): Record<string, Profile> {
  const file = profilesPath(configDir);
  if (!existsSync(file)) return {};
  let parsed: ProfileFile;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8')) as ProfileFile;
  } catch (err) {
    throw new CliError(`cannot read the profiles in ${file}: ${(err as Error).message}`, EXIT.failure, 'bad_profiles', 'fix or remove the file');
  }
  const profiles = parsed && typeof parsed.profiles === 'object' && parsed.profiles !== null ? parsed.profiles : {};
  const holdsSecret = Object.values(profiles).some((p) => p.secret && 'stored' in p.secret);
  if (holdsSecret && process.platform !== 'win32' && (statSync(file).mode & 0o077) !== 0) {
    throw new CliError(
      `${file} holds a client secret and others may read it (mode ${(statSync(file).mode & 0o777).toString(8)})`,
      EXIT.failure,
      'profiles_exposed',
      `chmod 600 ${file}, and rotate the secret if others could have read it`,
    );
  }
  return profiles;
}

export function writeProfiles(configDir: string, profiles: Record<string, Profile>): string {
  const file = profilesPath(configDir);
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const temp = `${file}.${process.pid}.tmp`;
  writeFileSync(temp, JSON.stringify({ profiles } satisfies ProfileFile, null, 2) + '\n', { mode: 0o600 });
  chmodSync(temp, 0o600); // the umask may have narrowed it; never widened
  renameSync(temp, file);
  return file;
}

export function getProfile(configDir: string, name: string): Profile {
  const profile = readProfiles(configDir)[name];
  if (!profile) {
    throw new CliError(`no profile "${name}" in ${profilesPath(configDir)}`, EXIT.notFound, 'no_profile', 'see tokenctl profile list; add one with tokenctl profile add');
  }
  return profile;
}

/** The secret a profile names, read now; undefined: the profile does not say. */
export function profileSecret(name: string, profile: Profile): string | null | undefined {
  const s = profile.secret;
  if (!s) return undefined;
  if ('none' in s) return null;
  if ('stored' in s) return s.stored;
  if ('env' in s) {
    const value = process.env[s.env];
    if (!value) throw new CliError(`profile "${name}" takes the client secret from $${s.env}, which is not set`, EXIT.usage, 'no_secret');
    return value;
  }
  try {
    return readFileSync(s.file, 'utf8').trim();
  } catch (err) {
    throw new CliError(`profile "${name}" takes the client secret from ${s.file}, which cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, EXIT.usage, 'no_secret');
  }
}

/** How a profile's secret is described in `profile list` (never the secret). */
export function describeSecret(profile: Profile): string {
  const s = profile.secret;
  if (!s) return 'TOKENCTL_CLIENT_SECRET, else asked at a terminal';
  if ('none' in s) return 'none (public client)';
  if ('stored' in s) return 'stored in the profile file';
  if ('env' in s) return `$${s.env}`;
  return `file ${s.file}`;
}
