/**
 * The ceiling: a bare node:http server that does the least any token endpoint must do. It reads
 * a form POST body, parses it, and answers a 12-field JSON (the shape of an active introspection
 * answer, RFC 7662 / spec 2.3) with the no-store headers. No client authentication, no lookup.
 *
 * Usage: node bench/servers/ceiling.js [port]   (prints `listening on http://127.0.0.1:PORT`)
 */
import { createServer } from 'node:http';
import { URLSearchParams } from 'node:url';

const HOST = '127.0.0.1';
const port = Number(process.argv[2] ?? 0);

const server = createServer((req, res) => {
  if (req.method !== 'POST') {
    res.writeHead(405, { Allow: 'POST' }).end();
    return;
  }
  /** @type {Buffer[]} */
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const form = new URLSearchParams(Buffer.concat(chunks).toString('latin1'));
    const token = form.get('token') ?? '';
    const now = Math.floor(Date.now() / 1000);
    const body = JSON.stringify({
      active: true,
      scope: 'read write',
      client_id: form.get('client_id') ?? 'bench',
      username: 'alice',
      token_type: 'access_token',
      exp: now + 3600,
      iat: now,
      nbf: now,
      sub: 'alice',
      aud: 'https://api.example.test',
      iss: 'https://localhost',
      jti: token.slice(4, 40),
    });
    res.writeHead(200, {
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': Buffer.byteLength(body),
      'Cache-Control': 'no-store',
      Pragma: 'no-cache',
    });
    res.end(body);
  });
});

server.listen(port, HOST, () => {
  const addr = /** @type {import('node:net').AddressInfo} */ (server.address());
  process.stdout.write(`listening on http://${HOST}:${addr.port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
