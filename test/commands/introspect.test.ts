import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, issue, issueInThePast, tempStore, type IssuedTokens, type TempStore } from '../helpers/cli.js';

const ACTIVE_KEYS = ['active', 'aud', 'client_id', 'exp', 'iat', 'iss', 'jti', 'nbf', 'scope', 'sub', 'token_type', 'username'];

describe('introspect', () => {
  let store: TempStore;
  let client: string;
  let live: IssuedTokens;
  let brief: IssuedTokens;

  beforeAll(async () => {
    store = tempStore({ inProcess: true });
    ({ id: client } = await createClient(store, ['--scope', 'read write', '--audience', 'https://api.example']));
    // Issued 10 s ago with a lifetime of 1 s: expired 9 s ago, no waiting.
    [live, brief] = await Promise.all([issue(store, client, 'alice', ['--sub', 'user-42']), issueInThePast(store, client, 'bob', 10_000, { accessTtlMs: 1000 })]);
  });
  afterAll(() => store.cleanup());

  it('--json of an active token is exactly the 2.3 record with all twelve fields, exit 0', async () => {
    const r = await store.run(['introspect', live.access_token, '--json'], { env: { TOKENCTL_ISSUER: 'https://issuer.test' } });
    expect(r.code).toBe(0);
    const body = r.json();
    expect(Object.keys(body).sort()).toEqual(ACTIVE_KEYS);
    expect(body).toMatchObject({
      active: true,
      client_id: client,
      username: 'alice',
      sub: 'user-42',
      scope: 'read write',
      token_type: 'access_token',
      aud: 'https://api.example',
      iss: 'https://issuer.test',
      jti: live.jti,
    });
    expect(body.exp - body.iat).toBe(3600);
    expect(body.nbf).toBe(body.iat);
  });

  it('a refresh token introspects as refresh_token; the hint is only a hint', async () => {
    const r = await store.json(['introspect', live.refresh_token, '--hint', 'access_token']);
    expect(r).toMatchObject({ active: true, token_type: 'refresh_token' });
  });

  it('--jti finds the token without holding it', async () => {
    const r = await store.json(['introspect', '--jti', live.jti]);
    expect(r).toMatchObject({ active: true, jti: live.jti });
  });

  it('the human view starts with the verdict, then the fields, and never the token', async () => {
    const r = await store.run(['introspect', live.access_token]);
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines[0]).toMatch(/^ACTIVE expires in (59|60) min$/);
    expect(r.stdout).toMatch(/^client_id:\s+/m);
    expect(r.stdout).toMatch(/^expires:\s+.* UTC \(in (59|60) min\)$/m);
    expect(r.stdout).not.toContain(live.access_token);
  });

  it('an expired token: EXPIRED … ago, {"active":false}, exit 3', async () => {
    const [human, json] = await Promise.all([store.run(['introspect', brief.access_token]), store.run(['introspect', brief.access_token, '--json'])]);
    expect(human.code).toBe(3);
    expect(human.stdout.split('\n')[0]).toMatch(/^EXPIRED \d+ s ago$/);
    expect(json.code).toBe(3);
    expect(json.json()).toEqual({ active: false });
  });

  it('a revoked token: REVOKED at …, {"active":false}, exit 3', async () => {
    const t = await issue(store, client, 'carol');
    await store.json(['revoke', t.access_token]);
    const [human, json] = await Promise.all([store.run(['introspect', t.access_token]), store.run(['introspect', '--jti', t.jti, '--json'])]);
    expect(human.code).toBe(3);
    expect(human.stdout.split('\n')[0]).toMatch(/^REVOKED at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \((now|\d+ s ago)\)$/);
    expect(json.json()).toEqual({ active: false });
  });

  it('an unknown token: UNKNOWN, {"active":false}, exit 3; not a tokenctl token: {"active":false}, exit 3, the reason on stderr; an unknown jti: exit 4 as in revoke', async () => {
    const unknown = 'tca_' + 'Z'.repeat(43);
    const [human, json, jti, revokeJti, malformed, malformedJson, none] = await Promise.all([
      store.run(['introspect', unknown]),
      store.run(['introspect', unknown, '--json']),
      store.run(['introspect', '--jti', '00000000-0000-4000-8000-000000000000', '--json']),
      store.run(['revoke', '--jti', '00000000-0000-4000-8000-000000000000', '--yes', '--json']),
      store.run(['introspect', 'not-a-token']),
      store.run(['introspect', 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig', '--json']),
      store.run(['introspect']),
    ]);
    expect(human.code).toBe(3);
    expect(human.stdout).toMatch(/^UNKNOWN no such token in \S+tokens\.db/);
    expect(json.code).toBe(3);
    expect(json.json()).toEqual({ active: false });
    expect(jti.code).toBe(4);
    expect(jti.stdout).toBe('');
    expect(JSON.parse(jti.stderr).error.message).toMatch(/no token with jti 00000000-0000-4000-8000-000000000000 in /);
    expect(revokeJti.code).toBe(jti.code);
    expect(malformed.code).toBe(3);
    expect(malformed.stderr).toMatch(/not a tokenctl token/);
    expect(malformedJson.code).toBe(3);
    expect(malformedJson.json()).toEqual({ active: false });
    expect(malformedJson.stderr).toMatch(/looks like a JWT/);
    expect(none.code).toBe(2);
  });
});
