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
  /**
   * Gives up this many ms after the request starts, however the server trickles its answer (the
   * request is destroyed): a deadline for the whole exchange, not a timeout on silence.
   */
  timeoutMs: number;
  /** An answer body longer than this is an error (the request is destroyed). Default 1 MiB. */
  maxBytes?: number;
  signal?: AbortSignal;
}

const DEFAULT_MAX_BYTES = 1 << 20;

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
    const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
    return new Promise((resolve, reject) => {
      const req = (secure ? httpsRequest : httpRequest)(
        url,
        { method: options.method ?? 'GET', headers: options.headers, agent: secure ? this.https : this.http, signal: options.signal },
        (res) => {
          const chunks: Buffer[] = [];
          let length = 0;
          res.on('data', (chunk: Buffer) => {
            length += chunk.length;
            if (length > maxBytes) req.destroy(new Error(`the answer from ${url.origin} is over ${maxBytes} bytes`));
            else chunks.push(chunk);
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
          res.on('error', reject);
          res.on('close', () => {
            if (!res.complete) reject(new Error(`the answer from ${url.origin} was cut off`));
          });
        },
      );
      // A timer, not req.setTimeout: that one is reset by every byte, so a server sending one
      // byte now and then held a check for ever (Node's socket timeout is an idle timeout).
      const deadline = setTimeout(() => req.destroy(new Error(`no answer from ${url.origin} within ${options.timeoutMs} ms`)), options.timeoutMs);
      req.on('close', () => clearTimeout(deadline));
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
