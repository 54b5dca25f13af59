import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, formAuth, issue, postForm, rfcBasic, specBasic, startTestServer, type Client, type TestServer } from '../helpers/server.js';

/**
 * Contract 3, asked of both doors of the server: a socket (the fast path of
 * fast-path.ts takes every POST with a form body of a declared length) and fastify's router
 * (`app.inject`, which never reaches the fast path). Each request must get the same status, the
 * same WWW-Authenticate header (or none) and the same body from both.
 */
describe('the revised contract on the fast path and on the fastify routes alike', () => {
  let s: TestServer;
  let web: Client;
  let spa: Client;

  beforeAll(async () => {
    s = await startTestServer();
    [web, spa] = await Promise.all([createClient(s.engine, 'web-app'), createClient(s.engine, 'spa-app', { public: true })]);
  });
  afterAll(() => s?.close());

  interface Seen {
    status: number;
    challenge: string | null;
    body: Record<string, unknown>;
  }

  async function viaSocket(path: string, form: Record<string, string>, headers: Record<string, string>): Promise<Seen> {
    const r = await postForm(s.url, path, form, headers);
    return { status: r.status, challenge: r.headers.get('www-authenticate'), body: r.json };
  }

  async function viaFastify(path: string, form: Record<string, string>, headers: Record<string, string>): Promise<Seen> {
    const r = await s.app.inject({ method: 'POST', url: path, headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, payload: new URLSearchParams(form).toString() });
    const challenge = r.headers['www-authenticate'];
    return { status: r.statusCode, challenge: typeof challenge === 'string' ? challenge : null, body: r.json() as Record<string, unknown> };
  }

  /** What may differ between two answers to the same request: the time stamp, and the tokens and jti of two grants. */
  const comparable = (seen: Seen) => {
    const { timestamp, access_token, refresh_token, jti, ...body } = seen.body;
    const present = (v: unknown) => v !== undefined;
    return { ...seen, body, present: [present(timestamp), present(access_token), present(refresh_token), present(jti)] };
  };

  type Case = [string, () => Promise<{ path: string; form: Record<string, string>; headers?: Record<string, string> }>, Partial<Seen>];
  const token = (form: Record<string, string>) => ({ path: '/oauth/token', form: { grant_type: 'refresh_token', ...form } });
  const cases: Case[] = [
    ['refresh, client_secret_post', async () => token({ refresh_token: (await issue(s.engine, web)).refresh_token, ...formAuth(web) }), { status: 200, challenge: null }],
    ['refresh, public client_id in the form', async () => token({ refresh_token: (await issue(s.engine, spa)).refresh_token, client_id: spa.id }), { status: 200 }],
    [
      'refresh, wrong client_secret_post: no challenge',
      async () => token({ refresh_token: (await issue(s.engine, web)).refresh_token, client_id: web.id, client_secret: 'wrong-password-1' }),
      { status: 401, challenge: null },
    ],
    [
      'refresh, wrong spec header: challenge',
      async () => ({ ...token({ refresh_token: (await issue(s.engine, web)).refresh_token }), headers: { authorization: specBasic({ id: web.id, secret: 'wrong-password-1' }) } }),
      { status: 401, challenge: 'Basic realm="tokenctl"' },
    ],
    ['refresh, no client authentication: no challenge', async () => token({ refresh_token: (await issue(s.engine, web)).refresh_token }), { status: 401, challenge: null }],
    [
      'refresh, header and client_secret both: 400',
      async () => ({ ...token({ refresh_token: (await issue(s.engine, web)).refresh_token, client_secret: web.secret! }), headers: { authorization: specBasic(web) } }),
      { status: 400 },
    ],
    ['introspection without token_type_hint', async () => ({ path: '/oauth/introspection', form: { token: (await issue(s.engine, web)).refresh_token, ...formAuth(web) } }), { status: 200 }],
    ['introspection, unknown hint: 400', async () => ({ path: '/oauth/introspection', form: { token: 'x', token_type_hint: 'id_token', ...formAuth(web) } }), { status: 400 }],
    [
      'introspection, wrong form password: 7.2 without a challenge',
      async () => ({ path: '/oauth/introspection', form: { token: 'x', client_id: web.id, client_secret: 'wrong-password-1' } }),
      { status: 401, challenge: null },
    ],
    [
      'introspection, wrong Basic password: 7.2 with the challenge',
      async () => ({ path: '/oauth/introspection', form: { token: 'x' }, headers: { authorization: rfcBasic({ id: web.id, secret: 'wrong-password-1' }) } }),
      { status: 401, challenge: 'Basic realm="tokenctl"' },
    ],
    ['revocation without token_type_hint', async () => ({ path: '/oauth/revocation', form: { token: (await issue(s.engine, web)).access_token, ...formAuth(web) } }), { status: 200 }],
  ];

  it.each(cases)('%s', async (_name, make, expected) => {
    // Two tokens of the same kind, one per door, so that a revocation or rotation by one cannot change the other's answer.
    const [a, b] = [await make(), await make()];
    const socket = await viaSocket(a.path, a.form, a.headers ?? {});
    const routed = await viaFastify(b.path, b.form, b.headers ?? {});
    expect(socket).toMatchObject(expected);
    const sameShape = (seen: Seen) => {
      const c = comparable(seen);
      // Revocation messages name the jti of the token revoked: compare their wording, not the id.
      if (typeof c.body.message === 'string') c.body.message = c.body.message.replace(/[0-9a-f-]{36}/g, 'JTI');
      return c;
    };
    expect(sameShape(routed)).toEqual(sameShape(socket));
  });
});
