import { createServer, type Server } from 'node:http';
import { compactVerify, createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JWTPayload } from 'jose';

/*
 * An SSF receiver written from the specifications only (OpenID SSF 1.0, CAEP 1.0, the CAEP
 * interoperability profile, RFC 8935/8936, RFC 8417, RFC 6749 §4.4, RFC 8414): no tokenctl code.
 * It discovers the transmitter, gets an access token by the client credentials grant, manages its
 * streams, takes pushed SETs on a node:http server of its own, polls, and verifies every SET
 * against the transmitter's JWKS.
 */

export const PUSH = 'urn:ietf:rfc:8935';
export const POLL = 'urn:ietf:rfc:8936';
export const SESSION_REVOKED = 'https://schemas.openid.net/secevent/caep/event-type/session-revoked';
export const VERIFICATION = 'https://schemas.openid.net/secevent/ssf/event-type/verification';

export interface TransmitterMetadata {
  spec_version: string;
  issuer: string;
  jwks_uri: string;
  delivery_methods_supported: string[];
  configuration_endpoint: string;
  status_endpoint: string;
  verification_endpoint: string;
  authorization_schemes: { spec_urn: string }[];
}

export interface StreamConfig {
  stream_id: string;
  iss: string;
  aud: string | string[];
  events_supported: string[];
  events_requested: string[];
  events_delivered: string[];
  delivery: { method: string; endpoint_url?: string };
}

/** A SET as the receiver verified it: its header's alg and its claims. */
export interface VerifiedSet {
  alg: string;
  claims: JWTPayload & { txn?: string; sub_id?: Record<string, unknown>; events: Record<string, Record<string, unknown>> };
}

export class SsfReceiver {
  /** SETs pushed to this receiver, as they came (RFC 8935 §2). */
  readonly pushed: string[] = [];
  private server: Server | undefined;
  private token = '';
  metadata!: TransmitterMetadata;

  constructor(
    private readonly issuer: string,
    private readonly clientId: string,
    private readonly clientSecret: string,
  ) {}

  /** SSF 1.0 §7.2 discovery, then RFC 8414 for the token endpoint, then RFC 6749 §4.4 for a token with ssf.manage. */
  async connect(): Promise<void> {
    const url = new URL(this.issuer);
    const path = url.pathname.replace(/\/+$/, '');
    const res = await fetch(`${url.origin}/.well-known/ssf-configuration${path}`);
    if (res.status !== 200) throw new Error(`SSF discovery: HTTP ${res.status}`);
    this.metadata = (await res.json()) as TransmitterMetadata;
    if (this.metadata.issuer !== this.issuer) throw new Error('SSF discovery: the issuer differs (SSF §7.2.3)');
    if (!this.metadata.authorization_schemes.some((s) => s.spec_urn === 'urn:ietf:rfc:6749')) throw new Error('the transmitter does not take OAuth');
    const as = (await (await fetch(`${url.origin}/.well-known/oauth-authorization-server${path}`)).json()) as { token_endpoint: string };
    const basic = Buffer.from(`${encodeURIComponent(this.clientId)}:${encodeURIComponent(this.clientSecret)}`).toString('base64');
    const t = await fetch(as.token_endpoint, {
      method: 'POST',
      headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'ssf.manage' }),
    });
    if (t.status !== 200) throw new Error(`client credentials grant: HTTP ${t.status} ${await t.text()}`);
    this.token = ((await t.json()) as { access_token: string }).access_token;
  }

  /** An HTTP call to the management API with the access token (RFC 6750 §2.1). */
  async api(method: string, url: string, body?: unknown): Promise<{ status: number; body: unknown; headers: Headers }> {
    const res = await fetch(url, {
      method,
      headers: { authorization: `Bearer ${this.token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    return { status: res.status, body: text === '' ? undefined : JSON.parse(text), headers: res.headers };
  }

  /** A push endpoint on 127.0.0.1 that accepts every SET with 202 (RFC 8935 §2.2). Returns its URL. */
  async listen(): Promise<string> {
    this.server = createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8').on('data', (d: string) => (body += d));
      req.on('end', () => {
        if (req.headers['content-type'] !== 'application/secevent+jwt') {
          res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ err: 'invalid_request', description: 'not a SET' }));
          return;
        }
        this.pushed.push(body);
        res.writeHead(202).end();
      });
    });
    await new Promise<void>((done) => this.server!.listen(0, '127.0.0.1', done));
    const address = this.server.address() as { port: number };
    return `http://127.0.0.1:${address.port}/events`;
  }

  /** SSF §8.1.1.1: creates a stream. */
  createStream(config: Record<string, unknown>) {
    return this.api('POST', this.metadata.configuration_endpoint, config);
  }

  /** SSF §8.1.4.2: asks for a verification event with `state`. */
  verify(streamId: string, state: string) {
    return this.api('POST', this.metadata.verification_endpoint, { stream_id: streamId, state });
  }

  /** RFC 8936 §2.4: one poll (acknowledging `ack`), with the access token. */
  async poll(endpoint: string, ack: string[] = []): Promise<Record<string, string>> {
    const res = await this.api('POST', endpoint, { ack, returnImmediately: true, maxEvents: 50 });
    if (res.status !== 200) throw new Error(`poll: HTTP ${res.status}`);
    return (res.body as { sets: Record<string, string> }).sets;
  }

  /** RFC 8417 §2, RFC 7515: a SET verified with the transmitter's JWKS: typ, iss, aud and signature. */
  async verifySet(set: string, audience: string | string[]): Promise<VerifiedSet> {
    const jwks = createLocalJWKSet((await (await fetch(this.metadata.jwks_uri)).json()) as { keys: [] });
    const { alg } = decodeProtectedHeader(set);
    await compactVerify(set, jwks);
    const { payload } = await jwtVerify(set, jwks, { issuer: this.metadata.issuer, audience, typ: 'secevent+jwt' });
    return { alg: alg!, claims: payload as VerifiedSet['claims'] };
  }

  async close(): Promise<void> {
    await new Promise<void>((done) => (this.server ? this.server.close(() => done()) : done()));
  }
}
