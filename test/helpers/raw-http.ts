import { connect } from 'node:net';
import { connect as connectTls } from 'node:tls';

/** What a server sent on one raw connection, and its last answer parsed. */
export interface RawAnswer {
  /** Every byte the server sent before it closed the connection. */
  text: string;
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** The last answer in `text` (earlier ones are those of pipelined requests). */
export function parseRawAnswer(text: string): RawAnswer {
  const start = Math.max(0, text.lastIndexOf('HTTP/1.1 '));
  const split = text.indexOf('\r\n\r\n', start);
  const [statusLine, ...lines] = text.slice(start, split).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const i = line.indexOf(':');
    headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
  }
  return { text, status: Number(statusLine?.split(' ')[1]), headers, body: text.slice(split + 4) };
}

/**
 * Writes exact bytes on a new connection to 127.0.0.1 (TLS when `ca` is given), half-closes it
 * with `end`, and reads until the server closes it: at most 5 s.
 */
export function rawExchange(port: number, bytes: string | Buffer, options: { ca?: string; end?: boolean } = {}): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = options.ca === undefined ? connect(port, '127.0.0.1') : connectTls({ port, host: '127.0.0.1', ca: options.ca });
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error('the server did not close the connection within 5 s'));
    }, 5_000);
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(parseRawAnswer(Buffer.concat(chunks).toString('utf8')));
    });
    if (typeof bytes === 'string') socket.write(bytes, 'latin1');
    else socket.write(bytes);
    if (options.end) socket.end();
  });
}
