import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { authorizeClientId, checkAuthorizeRequest } from '../../src/engine/authorization/authorize-request.js';
import { matchRedirectUri } from '../../src/engine/authorization/redirect-uris.js';
import { s256 } from '../../src/engine/authorization/pkce.js';
import { makeClient } from '../helpers/records.js';

/**
 * Property-based tests (fast-check) of the authorization request's parser (RFC 6749 §4.1.1,
 * §4.1.2.1, RFC 7636, RFC 8252 §7.3): for any query, it never throws; it redirects only to a
 * registered redirect URI (or a loopback one with another port), never when the client or its
 * redirect URI is in doubt; and it accepts only a request with every rule met.
 */

const RUNS = 500;
const REGISTERED = ['https://app.example.test/cb', 'http://127.0.0.1/loop'];
const client = makeClient({ id: 'app', scope: 'read write', redirectUris: REGISTERED, grantTypes: ['authorization_code'] });
const NAMES = ['client_id', 'redirect_uri', 'response_type', 'scope', 'state', 'code_challenge', 'code_challenge_method', 'nonce', 'prompt'];
const challenge = s256('v'.repeat(43));

const value = (name: string) =>
  ({
    client_id: fc.constantFrom('app', 'other', '', 'APP'),
    redirect_uri: fc.constantFrom(...REGISTERED, 'http://127.0.0.1:4321/loop', 'http://127.0.0.1:4321/loop/', 'https://app.example.test/cb?x', 'https://evil.example/cb', '', 'javascript:alert(1)'),
    response_type: fc.constantFrom('code', 'token', 'code id_token', ''),
    scope: fc.constantFrom('read', 'read write', 'admin', '', 'read  write', 'r"e'),
    state: fc.string({ maxLength: 30 }),
    code_challenge: fc.constantFrom(challenge, 'short', '', challenge + 'x', '!'.repeat(43)),
    code_challenge_method: fc.constantFrom('S256', 'plain', 's256', ''),
  })[name] ?? fc.string({ maxLength: 10 });

const pair = fc.constantFrom(...NAMES).chain((name) => value(name).map((v) => [name, v] as const));
const query = fc.array(pair, { maxLength: 10 });
/** A request that meets every rule, to which one thing at a time is done. */
const valid: (readonly [string, string])[] = [
  ['client_id', 'app'],
  ['redirect_uri', REGISTERED[0]!],
  ['response_type', 'code'],
  ['code_challenge', challenge],
  ['code_challenge_method', 'S256'],
  ['state', 'st'],
];

describe('the authorization request parser', () => {
  it('never throws, and redirects only to a registered redirect URI', () => {
    fc.assert(
      fc.property(query, fc.boolean(), (pairs, known) => {
        const named = authorizeClientId(pairs);
        const result = checkAuthorizeRequest(pairs, known ? client : null);
        if ('refusal' in result && result.refusal.to === 'redirect') {
          expect(known).toBe(true);
          expect(matchRedirectUri(REGISTERED, result.refusal.redirectUri)).not.toBeNull();
          expect('clientId' in named).toBe(true);
        }
        if ('request' in result) {
          expect(matchRedirectUri(REGISTERED, result.request.redirectUri)).toBe(result.request.redirectUri);
          expect(result.request.codeChallenge).toBe(challenge);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it('a parameter given twice is never accepted, and a repeated client_id or redirect_uri never redirects', () => {
    fc.assert(
      fc.property(fc.constantFrom(...valid.map(([n]) => n)), fc.integer({ min: 0, max: valid.length }), (name, at) => {
        const extra = valid.find(([n]) => n === name)!;
        const pairs = [...valid.slice(0, at), extra, ...valid.slice(at)];
        const result = checkAuthorizeRequest(pairs, client);
        expect('refusal' in result).toBe(true);
        if ((name === 'client_id' || name === 'redirect_uri') && 'refusal' in result) expect(result.refusal.to).toBe('page');
      }),
      { numRuns: RUNS },
    );
  });

  it('accepts exactly when every rule is met, whatever unknown parameters come along', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.constantFrom('nonce', 'prompt', 'foo', 'resource'), fc.string({ maxLength: 10 })), { maxLength: 4 }), (unknown) => {
        const result = checkAuthorizeRequest([...valid, ...unknown], client);
        expect('request' in result && result.request).toMatchObject({ redirectUri: REGISTERED[0], scope: 'read write', state: 'st', redirectUriSent: true });
      }),
      { numRuns: RUNS },
    );
  });
});
