import { readFileSync } from 'node:fs';
import { request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { buildSpecAuthorization } from '../engine/client-auth.js';
import type { IntrospectionResult, RevocationResult, TokenResponse } from '../engine/results.js';

/**
 * A client of the HTTP protocol of spec part 4 (contract 3): what `refresh`, `revoke` and
 * `introspect --url …` speak to any server of this kind. It builds the requests from the spec
 * alone: the scenario I/II Authorization header for the token endpoint (spec part 5), form
 * credentials for revocation and introspection.
 */
export interface RemoteOptions {
  /** Base URL of the server, e.g. `https://127.0.0.1:8443` (a path prefix is kept). */
  url: string;
  clientId: string;
  /** The client password; omitted for a public client (spec part 5 scenario II). */
  clientSecret?: string;
  /** Path to a PEM file of certificates to trust (e.g. the one `serve --tls-self-signed` writes). */
  ca?: string;
  /** Milliseconds before a request is given up; default 10 s. */
  timeoutMs?: number;
}

/**
 * The server answered with an error, or did not answer at all.
 * `status` is the HTTP status, or 0 when no HTTP answer arrived (connection refused, TLS failure,
 * timeout); `body` is the parsed JSON answer (or its text, or null).
 */
export class RemoteError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly body: unknown,
    options?: { cause?: unknown; headers?: IncomingHttpHeaders; usage?: boolean },
  ) {
    super(message, options);
    this.name = 'RemoteError';
    this.headers = options?.headers;
    this.usage = options?.usage ?? false;
  }

  /** The user's own input was wrong (a URL that is none, a CA file that cannot be used): no server was asked. */
  readonly usage: boolean;

  /** The answer's headers, when there was an answer (a `DPoP-Nonce` to retry with). */
  readonly headers: IncomingHttpHeaders | undefined;
}

/** What signs DPoP proofs for the token endpoint (RFC 9449 §4): a {@link import('./dpop-key.js').DpopKey}. */
export interface DpopProver {
  proof(htm: string, htu: URL, nonce?: string): Promise<string>;
}

const DEFAULT_TIMEOUT_MS = 10_000;
const MAX_RESPONSE_BYTES = 1024 * 1024;

/** Spec 4.1: exchanges a refresh token; returns the 2.1 token response. */
export async function remoteRefresh(opts: RemoteOptions, refreshToken: string, scope?: string, dpop?: DpopProver): Promise<TokenResponse> {
  const form: Record<string, string> = { grant_type: 'refresh_token', refresh_token: refreshToken };
  if (scope !== undefined) form.scope = scope;
  return (await tokenRequest(opts, endpointUrl(opts.url, 'oauth/token'), form, buildSpecAuthorization(opts.clientId, opts.clientSecret), dpop)) as TokenResponse;
}

/**
 * A token request, with a DPoP proof when `dpop` is given: a server that answers
 * `use_dpop_nonce` with a `DPoP-Nonce` header (RFC 9449 §8) is asked once more, with a new
 * proof carrying that nonce.
 */
async function tokenRequest(opts: RemoteOptions, url: URL, form: Record<string, string>, authorization: string | undefined, dpop: DpopProver | undefined): Promise<unknown> {
  if (dpop === undefined) return send(opts, 'POST', url, form, authorization);
  let nonce: string | undefined;
  for (let attempt = 0; ; attempt++) {
    try {
      return await send(opts, 'POST', url, form, authorization, { dpop: await dpop.proof('POST', url, nonce) });
    } catch (err) {
      const asked = err instanceof RemoteError ? nonceAskedFor(err) : undefined;
      if (attempt > 0 || asked === undefined) throw err;
      nonce = asked;
    }
  }
}

/** §8: the nonce of a `use_dpop_nonce` error (400 from a token endpoint), or undefined. */
function nonceAskedFor(err: RemoteError): string | undefined {
  const body = err.body as { error?: unknown } | null;
  const nonce = err.headers?.['dpop-nonce'];
  return body?.error === 'use_dpop_nonce' && typeof nonce === 'string' && nonce !== '' ? nonce : undefined;
}

/** Spec 4.2: revokes a token; returns the 2.2 revocation result. */
export async function remoteRevoke(opts: RemoteOptions, token: string, hint?: string): Promise<RevocationResult> {
  return (await post(opts, 'oauth/revocation', credentialForm(opts, token, hint))) as RevocationResult;
}

/** Spec 4.3: introspects a token; returns the 2.3 introspection result. */
export async function remoteIntrospect(opts: RemoteOptions, token: string, hint?: string): Promise<IntrospectionResult> {
  return (await post(opts, 'oauth/introspection', credentialForm(opts, token, hint))) as IntrospectionResult;
}

/**
 * Spec 4.2/4.3 parameters. token_type_hint only when the user gave one (contract 3:
 * servers look the token up whatever its type, and a guessed hint could be wrong).
 */
function credentialForm(opts: RemoteOptions, token: string, hint?: string): Record<string, string> {
  const form: Record<string, string> = { token };
  if (hint !== undefined) form.token_type_hint = hint;
  form.client_id = opts.clientId;
  if (opts.clientSecret) form.client_secret = opts.clientSecret;
  return form;
}

/** Resolves an endpoint against the base URL, keeping any path prefix of the base. */
export function endpointUrl(base: string, endpoint: string): URL {
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    throw new RemoteError(`"${base}" is not a URL: give the server's base URL, like https://127.0.0.1:8443`, 0, null, { usage: true });
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new RemoteError(`"${base}" is not an http(s) URL: give the server's base URL, like https://127.0.0.1:8443`, 0, null, { usage: true });
  }
  if (!url.pathname.endsWith('/')) url.pathname += '/';
  return new URL(endpoint, url);
}

/**
 * RFC 6749 §4.1.3: exchanges an authorization code at `tokenEndpoint` (an absolute URL, from the
 * server's RFC 8414 metadata); returns the 2.1 token response. A confidential client
 * authenticates with the spec's header as refresh does; a public one sends its `client_id`.
 */
export async function remoteAuthorizationCode(
  opts: RemoteOptions,
  tokenEndpoint: string,
  grant: { code: string; codeVerifier: string; redirectUri: string },
  dpop?: DpopProver,
): Promise<TokenResponse> {
  const form: Record<string, string> = { grant_type: 'authorization_code', code: grant.code, code_verifier: grant.codeVerifier, redirect_uri: grant.redirectUri };
  if (!opts.clientSecret) form.client_id = opts.clientId;
  const authorization = opts.clientSecret ? buildSpecAuthorization(opts.clientId, opts.clientSecret) : undefined;
  return (await tokenRequest(opts, absoluteUrl(tokenEndpoint, 'token_endpoint'), form, authorization, dpop)) as TokenResponse;
}

/** RFC 8414 §3: GETs a metadata document (any JSON object) from `url`. */
export async function remoteGetJson(opts: RemoteOptions, url: URL): Promise<Record<string, unknown>> {
  const body = await send(opts, 'GET', url);
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new RemoteError(`the answer of GET ${url.href} is not a JSON object`, 200, body);
  return body as Record<string, unknown>;
}

/** An http(s) URL a server named (an endpoint of its metadata), or a RemoteError saying which is wrong. */
export function absoluteUrl(value: unknown, name: string): URL {
  let url: URL | undefined;
  try {
    url = typeof value === 'string' ? new URL(value) : undefined;
  } catch {
    url = undefined;
  }
  if (url === undefined || (url.protocol !== 'https:' && url.protocol !== 'http:')) {
    throw new RemoteError(`the server's ${name} ${JSON.stringify(sanitize(value))} is not an http(s) URL`, 0, null);
  }
  return url;
}

/** Why a CA file cannot be read, in words rather than an errno. */
const CA_READ_ERRORS: Record<string, string> = { ENOENT: 'no such file', EACCES: 'permission denied', EISDIR: 'it is a directory' };

/**
 * The `--ca` file: PEM certificates, or a usage RemoteError saying what is wrong with it. A file
 * that holds no certificate would otherwise surface as a TLS failure that blames the server.
 */
function readCaFile(path: string): Buffer {
  let ca: Buffer;
  try {
    ca = readFileSync(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? '';
    throw new RemoteError(`cannot read the CA file ${path}: ${CA_READ_ERRORS[code] ?? (err as Error).message}`, 0, null, { cause: err, usage: true });
  }
  if (!ca.includes('-----BEGIN CERTIFICATE-----')) {
    throw new RemoteError(`the CA file ${path} holds no PEM certificate (a "-----BEGIN CERTIFICATE-----" block): give --ca the server's certificate, e.g. the one serve --tls-self-signed wrote`, 0, null, { usage: true });
  }
  return ca;
}

function post(opts: RemoteOptions, endpoint: string, form: Record<string, string>, authorization?: string): Promise<unknown> {
  return send(opts, 'POST', endpointUrl(opts.url, endpoint), form, authorization);
}

function send(opts: RemoteOptions, method: 'GET' | 'POST', url: URL, form?: Record<string, string>, authorization?: string, extra: Record<string, string> = {}): Promise<unknown> {
  const body = form === undefined ? undefined : new URLSearchParams(form).toString();
  const headers: Record<string, string> = { accept: 'application/json', ...extra };
  if (body !== undefined) {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    headers['content-length'] = String(Buffer.byteLength(body));
  }
  if (authorization) headers.authorization = authorization;
  const ca = opts.ca === undefined ? undefined : readCaFile(opts.ca);
  const timeout = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;

  return new Promise((resolve, reject) => {
    const options = { method, headers, ...(url.protocol === 'https:' && ca ? { ca } : {}) };
    let phase = 'connecting';
    const req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, options, (res) => {
      phase = 'reading the answer';
      readBody(res).then((text) => {
        clearTimeout(deadline);
        const status = res.statusCode ?? 0;
        const parsed = sanitize(parseJson(text));
        const printable = sanitize(text) as string;
        if (status === 200 && parsed !== undefined) return resolve(parsed);
        reject(new RemoteError(summarise(method, url, status, parsed ?? printable), status, parsed ?? (printable || null), { headers: res.headers }));
      }, reject);
    });
    req.on('socket', (socket) => socket.once(url.protocol === 'https:' ? 'secureConnect' : 'connect', () => (phase = 'waiting for an answer')));
    // One deadline for the whole exchange (connection, request and answer), not a socket idle
    // timer that a slow or silent server can stretch.
    const deadline = setTimeout(() => {
      req.destroy(new RemoteError(`no answer from ${url.origin} within ${formatSeconds(timeout)} (still ${phase}; --timeout sets the limit)`, 0, null));
    }, timeout);
    req.on('error', (err) => {
      clearTimeout(deadline);
      reject(err instanceof RemoteError ? err : connectionError(url, err, opts.ca));
    });
    req.end(body);
  });
}

function formatSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${(ms / 1000).toFixed(1)}s`;
}

/**
 * A server's strings are printed to a terminal: control characters (an escape sequence can
 * rewrite the screen or the window title) are shown as \u escapes instead of being sent raw.
 */
export function sanitize(value: unknown): unknown {
  if (typeof value === 'string') {
    // eslint-disable-next-line no-control-regex
    return value.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  }
  if (Array.isArray(value)) return value.map(sanitize);
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [sanitize(k) as string, sanitize(v)]));
  return value;
}

function readBody(res: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    res.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_RESPONSE_BYTES) res.destroy(new RemoteError('the server answer is larger than 1 MiB', res.statusCode ?? 0, null));
      else chunks.push(chunk);
    });
    res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    res.on('error', reject);
  });
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** "401 invalid_client: The client account or password is incorrect: x (POST https://…/oauth/token)" */
function summarise(method: string, url: URL, status: number, body: unknown): string {
  let detail = '';
  if (body && typeof body === 'object') {
    const b = body as Record<string, unknown>;
    const error = typeof b.error === 'string' ? b.error : '';
    const text = [b.error_description, b.message].find((v): v is string => typeof v === 'string') ?? '';
    detail = [error, text].filter(Boolean).join(': ');
  } else if (typeof body === 'string' && body !== '') {
    detail = body.length > 200 ? body.slice(0, 200) + '…' : body;
  }
  if (status === 200) detail = 'the answer is not JSON';
  return `the server answered ${status}${detail ? ` ${detail}` : ''} (${method} ${url.href})`;
}

function connectionError(url: URL, err: NodeJS.ErrnoException, ca: string | undefined): RemoteError {
  const code = err.code ?? '';
  let message: string;
  if (code === 'ECONNREFUSED') message = `cannot connect to ${url.origin}: connection refused (is \`tokenctl serve\` running there?)`;
  else if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') message = `cannot resolve the host ${url.hostname}`;
  else if (code === 'ECONNRESET') message = `the connection to ${url.origin} was reset`;
  else if (/CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS|ERR_SSL/.test(code) || /certificate/i.test(err.message)) {
    message =
      `TLS failure talking to ${url.origin}: ${err.message}` +
      (ca ? ` (the certificate does not match the CA file ${ca})` : ' (for a self-signed server certificate, pass --ca with its PEM file)');
  } else if (/wrong version number|packet length too long/i.test(err.message)) {
    message = `TLS failure talking to ${url.origin}: the server does not speak HTTPS there (try http://)`;
  } else message = `cannot reach ${url.origin}: ${err.message}`;
  return new RemoteError(message, 0, null, { cause: err });
}
