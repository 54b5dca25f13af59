import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { rootCertificates } from 'node:tls';
import { pushDestination, refusedAddress, refusedHost, refusedPort } from '../engine/push-destination.js';
import type { ReceiverRecord } from '../store/store.js';

/** What the receiver made of one pushed SET (RFC 8935 §2.2–2.4). */
export type PushResult =
  | { kind: 'accepted' }
  /** 400 with an RFC 8935 error object: this SET will never be accepted. */
  | { kind: 'rejected'; error: string }
  /** Anything else: try again later. */
  | { kind: 'failed'; error: string };

/** How long one push may take, connection to answer. */
export const PUSH_TIMEOUT_MS = 10_000;
/** How much of an answer is read (an error object is small). */
const MAX_ANSWER_BYTES = 16 * 1024;

/**
 * RFC 8935 §2: POSTs one SET to a push receiver: `Content-Type: application/secevent+jwt`,
 * `Accept: application/json`, its Authorization when it has one, its CA trusted besides the
 * system's. Never throws; errors never hold the Authorization value.
 */
export function pushSet(receiver: ReceiverRecord, set: string, timeoutMs = PUSH_TIMEOUT_MS): Promise<PushResult> {
  return new Promise((resolve) => {
    let url: URL;
    const { url: href, allowPrivateNetwork } = pushDestination(receiver.endpointUrl ?? '');
    try {
      url = new URL(href);
    } catch {
      resolve({ kind: 'failed', error: 'the endpoint URL is not valid' });
      return;
    }
    // Judged again here, not only at `receiver add`: the rules may have changed since it was stored.
    const refused = refusedPort(Number(url.port || (url.protocol === 'https:' ? 443 : 80))) ?? refusedHost(url.hostname, allowPrivateNetwork);
    if (refused !== undefined) {
      resolve({ kind: 'failed', error: `refused: ${refused}` });
      return;
    }
    const headers: Record<string, string | number> = {
      'content-type': 'application/secevent+jwt',
      accept: 'application/json',
      'content-length': Buffer.byteLength(set),
    };
    if (receiver.authorization !== null) headers.authorization = receiver.authorization;
    const options = { method: 'POST', headers, timeout: timeoutMs, lookup: guardedLookup(allowPrivateNetwork) };
    const onAnswer = (res: import('node:http').IncomingMessage): void => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        if (size < MAX_ANSWER_BYTES) chunks.push(c);
        size += c.length;
      });
      res.on('error', () => resolve({ kind: 'failed', error: `the answer (HTTP ${res.statusCode}) was cut off` }));
      res.on('end', () => resolve(judge(res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8'))));
    };
    const req =
      url.protocol === 'https:'
        ? httpsRequest(url, { ...options, ...(receiver.caPem !== null ? { ca: [...rootCertificates, receiver.caPem] } : {}) }, onAnswer)
        : httpRequest(url, options, onAnswer);
    const deadline = setTimeout(() => req.destroy(new Error(`no answer within ${Math.round(timeoutMs / 1000)} s`)), timeoutMs);
    req.on('timeout', () => req.destroy(new Error(`no answer within ${Math.round(timeoutMs / 1000)} s`)));
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ kind: 'failed', error: describe(err) }));
    req.on('close', () => clearTimeout(deadline));
    req.end(set);
  });
}

/**
 * dns.lookup, refusing a name any of whose addresses may not be pushed to: checked on the
 * addresses the socket then connects to, so a name that resolved to a public address when the
 * receiver was added cannot be turned to a metadata or private one later (DNS rebinding).
 */
function guardedLookup(allowPrivateNetwork: boolean) {
  return (hostname: string, options: LookupOptions, callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void): void => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '');
      const refused = addresses.map((a) => refusedAddress(a.address, allowPrivateNetwork)).find((r) => r !== undefined);
      if (refused !== undefined) return callback(new Error(`refused: ${hostname} resolves to ${refused}`), '');
      if (options.all) return callback(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

/**
 * RFC 8935 §2.2 asks for 202; any 2xx is a delivery (contract 7: receivers answer 200 and 204
 * too, and retrying them for a day would hold back every later event). §2.3: 400 with
 * `{"err", "description"}` is this SET refused for good.
 */
export function judge(status: number, body: string): PushResult {
  if (status >= 200 && status <= 299) return { kind: 'accepted' };
  if (status === 400) {
    try {
      const e = JSON.parse(body) as { err?: unknown; description?: unknown };
      if (typeof e.err === 'string') {
        const description = typeof e.description === 'string' ? `: ${e.description.slice(0, 200)}` : '';
        return { kind: 'rejected', error: `HTTP 400 ${e.err.slice(0, 50)}${description}` };
      }
    } catch {
      /* not an RFC 8935 error: a transient failure like any other */
    }
  }
  return { kind: 'failed', error: `HTTP ${status}` };
}

function describe(err: NodeJS.ErrnoException): string {
  const code = err.code ? `${err.code}: ` : '';
  return (code + err.message).slice(0, 300);
}
