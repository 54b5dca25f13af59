import { Agent as HttpAgent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

/**
 * The resource server's HTTP client: node:https with keep-alive and the development CA when
 * given (Node's fetch cannot take a CA without undici), plain http for a server on loopback.
 */
export interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface SendOptions {
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  /** Gives up after this many ms (the request is destroyed). */
  timeoutMs: number;
  signal?: AbortSignal;
}

export class Transport {
  private readonly https: HttpsAgent;
  private readonly http: HttpAgent;

  constructor(ca: string | Buffer | undefined, maxSockets: number) {
    this.https = new HttpsAgent({ keepAlive: true, maxSockets, ...(ca !== undefined ? { ca } : {}) });
    this.http = new HttpAgent({ keepAlive: true, maxSockets });
  }

  send(url: URL, options: SendOptions): Promise<Reply> {
    const secure = url.protocol === 'https:';
    if (!secure && url.protocol !== 'http:') return Promise.reject(new Error(`unsupported URL scheme ${url.protocol}`));
    return new Promise((resolve, reject) => {
      const req = (secure ? httpsRequest : httpRequest)(
        url,
        { method: options.method ?? 'GET', headers: options.headers, agent: secure ? this.https : this.http, signal: options.signal },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
          res.on('error', reject);
        },
      );
      req.setTimeout(options.timeoutMs, () => req.destroy(new Error(`no answer from ${url.origin} within ${options.timeoutMs} ms`)));
      req.on('error', reject);
      req.end(options.body);
    });
  }

  close(): void {
    this.https.destroy();
    this.http.destroy();
  }
}

/** The JSON of a reply, or an error naming the status when it is not JSON. */
export function replyJson(reply: Reply, what: string): unknown {
  try {
    return JSON.parse(reply.body) as unknown;
  } catch {
    throw new Error(`${what}: HTTP ${reply.status}, not JSON`);
  }
}

/** RFC 6749 §2.3.1: client id and secret, each form-urlencoded, in a Basic header. */
export function basicAuthorization(clientId: string, clientSecret: string): string {
  const enc = (s: string) => encodeURIComponent(s).replace(/%20/g, '+');
  return 'Basic ' + Buffer.from(`${enc(clientId)}:${enc(clientSecret)}`).toString('base64');
}
