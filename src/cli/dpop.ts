import type { DpopKey } from '../remote/dpop-key.js';
import { CliError, EXIT } from './errors.js';
import { color } from './render/style.js';

/** The key of `--dpop-key` (and `--dpop-key-out`), or undefined without it; a bad key file is a usage error. */
export async function dpopKeyFromFlags(f: { 'dpop-key'?: string; 'dpop-key-out'?: string }): Promise<DpopKey | undefined> {
  if (f['dpop-key'] === undefined) return undefined;
  const { loadDpopKey, DpopKeyError } = await import('../remote/dpop-key.js');
  try {
    return await loadDpopKey(f['dpop-key'], f['dpop-key-out']);
  } catch (err) {
    if (err instanceof DpopKeyError) throw new CliError(err.message, EXIT.usage, 'invalid_dpop_key');
    throw err;
  }
}

/**
 * Goes to stderr (stdout keeps the server's answer): the key's thumbprint, where the key is, and
 * whether the server bound the tokens to it (`token_type` DPoP, RFC 9449 §5).
 */
export function dpopNotice(key: DpopKey, tokenType: string): string {
  const where = key.source === 'generated' ? 'a new key kept in memory only: the bound tokens cannot be refreshed after this command' : `key ${key.source}`;
  const bound = tokenType.toLowerCase() === 'dpop' ? 'the server bound the tokens to it' : `the server answered token_type ${tokenType}: the tokens are NOT bound to the key`;
  return `DPoP key thumbprint (cnf.jkt) ${key.jkt} (${key.alg}, ${where}); ${color.bold(bound)}.`;
}
