import { describe, expect, it } from 'vitest';
import type { RequestLog } from '../../src/engine/client-requests.js';
import { InvalidClientError, InvalidTokenError, ReuseDetectedError } from '../../src/engine/errors.js';
import { credentialsOf, HOUR, makeEngine, SECOND } from '../helpers/engine.js';

/**
 * The three client calls of the engine, one per endpoint (refreshAsClient, revokeAsClient,
 * introspectAsClient): credentials and token in, the wire record and what the request log and
 * the metrics need out; a failure tells the client it failed for, once authenticated.
 */
describe('one engine call per client-facing endpoint', () => {
  async function setup(options: { rotateRefreshTokens?: boolean } = {}) {
    const env = makeEngine(options);
    const { client_secret } = await env.engine.createClient({ id: 'conf', name: 'conf', scope: 'read write' }, 'cli:op');
    await env.engine.createClient({ id: 'pub', name: 'pub', public: true }, 'cli:op');
    const conf = credentialsOf({ id: 'conf' }, client_secret!);
    const pub = credentialsOf({ id: 'pub' });
    return { ...env, conf, pub, issued: await env.engine.issue({ clientId: 'conf', username: 'alice' }) };
  }

  it('refreshAsClient: the token response, the client, the new jti, and whether it rotated', async () => {
    const { engine, conf, issued } = await setup();
    const o = await engine.refreshAsClient({ credentials: conf, token: issued.refresh_token, scope: 'read' });
    expect(o).toEqual({ result: expect.objectContaining({ token_type: 'bearer', scope: 'read' }), clientId: 'conf', jti: o.result.jti, done: { kind: 'refreshed', rotated: false } });
    expect(o.result.refresh_token).toBe(issued.refresh_token);

    const rotating = await setup({ rotateRefreshTokens: true });
    const r = await rotating.engine.refreshAsClient({ credentials: rotating.conf, token: rotating.issued.refresh_token });
    expect(r.done).toEqual({ kind: 'refreshed', rotated: true });
    expect(r.result.refresh_token).not.toBe(rotating.issued.refresh_token);
  });

  it('introspectAsClient: the spec 2.3 record, the jti when active, and whether it was', async () => {
    const { engine, conf, pub, issued } = await setup();
    expect(await engine.introspectAsClient({ credentials: conf, token: issued.access_token })).toEqual({
      result: expect.objectContaining({ active: true, jti: issued.jti }),
      clientId: 'conf',
      jti: issued.jti,
      done: { kind: 'introspected', active: true },
    });
    // A public client sees only its own tokens (contract 3).
    expect(await engine.introspectAsClient({ credentials: pub, token: issued.access_token })).toEqual({
      result: { active: false },
      clientId: 'pub',
      jti: null,
      done: { kind: 'introspected', active: false },
    });
  });

  it('revokeAsClient: the spec 2.2 record, the jti acted on, and what was done', async () => {
    const { engine, conf, pub, issued } = await setup();
    expect(await engine.revokeAsClient({ credentials: pub, token: issued.access_token })).toMatchObject({ result: { code: 'token_invalid' }, clientId: 'pub', jti: null, done: { kind: 'revoke_noop' } });
    expect(await engine.revokeAsClient({ credentials: conf, token: issued.refresh_token })).toMatchObject({
      result: { code: 'token_revoke_success' },
      clientId: 'conf',
      done: { kind: 'revoked', grant: true },
    });
  });

  it("a failure before authentication names no client in the request's log; one after it names the client it failed for", async () => {
    const { engine, conf, clock } = await setup();
    const issued = await engine.issue({ clientId: 'conf', username: 'alice', refreshTtlMs: HOUR });
    const badLog: RequestLog = { clientId: null };
    const bad = await engine.refreshAsClient({ credentials: { clientId: 'conf', secrets: ['wrong-password-1'] }, token: issued.refresh_token, log: badLog }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(InvalidClientError);
    expect(bad).toMatchObject({ reason: 'bad_secret' });
    expect(badLog.clientId).toBeNull();
    clock.advance(HOUR + SECOND);
    const log: RequestLog = { clientId: null };
    const expired = await engine.refreshAsClient({ credentials: conf, token: issued.refresh_token, log }).catch((e: unknown) => e);
    expect(expired).toBeInstanceOf(InvalidTokenError);
    expect(log.clientId).toBe('conf');
    const revokeLog: RequestLog = { clientId: null };
    await engine.revokeAsClient({ credentials: conf, token: issued.access_token, log: revokeLog });
    expect(revokeLog.clientId).toBe('conf');
  });

  it('a replaced refresh token presented again is ReuseDetectedError: revoked, with the tokens of its grant counted', async () => {
    const { engine, conf, issued, clock } = await setup({ rotateRefreshTokens: true });
    await engine.refreshAsClient({ credentials: conf, token: issued.refresh_token });
    clock.advance(10 * SECOND);
    const log: RequestLog = { clientId: null };
    const reuse = await engine.refreshAsClient({ credentials: conf, token: issued.refresh_token, log }).catch((e: unknown) => e);
    expect(reuse).toBeInstanceOf(ReuseDetectedError);
    expect(reuse).toMatchObject({ code: 'invalid_token', reason: 'revoked', grantTokens: 4 });
    expect(log.clientId).toBe('conf');
  });
});
