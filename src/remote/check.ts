import { randomBytes } from 'node:crypto';
import { remoteIntrospect, RemoteError, type RemoteOptions } from './http-client.js';

/** What `profile check` found: whether the server answers, and whether it accepts the credentials. */
export interface CredentialsCheck {
  /** The server answered an introspection request (any HTTP answer). */
  answers: boolean;
  /** It authenticated the client (200), refused it (401), or could not be asked. */
  credentials: 'accepted' | 'refused' | 'unknown';
  /** What went wrong, when something did. */
  problem?: string;
}

/**
 * Introspects a random, well-formed token that no server holds (spec 4.3): a server that answers
 * 200 (`{"active":false}`) authenticated the client; 401 is the spec 7.2 answer to wrong
 * credentials. Nothing is changed on the server, and no real token is sent.
 */
export async function checkCredentials(target: RemoteOptions): Promise<CredentialsCheck> {
  const probe = `tca_${randomBytes(32).toString('base64url')}`;
  try {
    await remoteIntrospect(target, probe, 'access_token');
    return { answers: true, credentials: 'accepted' };
  } catch (error) {
    if (!(error instanceof RemoteError)) throw error;
    if (error.status === 401) return { answers: true, credentials: 'refused', problem: error.message };
    return { answers: error.status !== 0, credentials: 'unknown', problem: error.message };
  }
}
