#!/usr/bin/env node
// The ten lines of docs/resource-server.md, runnable: an API on Node's http protected by tokenctl.
// Environment: TOKENCTL_URL, RS_CLIENT_ID, RS_CLIENT_SECRET, TOKENCTL_CA (optional), RS_AUDIENCE (optional: the receiver's audience, and the aud its tokens must carry), PORT.
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { resourceServer } from 'tokenctl/resource-server';

const rs = resourceServer({ url: process.env.TOKENCTL_URL, clientId: process.env.RS_CLIENT_ID, clientSecret: process.env.RS_CLIENT_SECRET,
  audience: process.env.RS_AUDIENCE, ca: process.env.TOKENCTL_CA ? readFileSync(process.env.TOKENCTL_CA) : undefined });
createServer(async (req, res) => {
  const who = await rs.authenticate(req).catch(() => undefined);     // undefined: tokenctl unreachable
  if (who === undefined) return res.writeHead(503).end();
  if (!who) return rs.sendUnauthorized(res, req);                    // RFC 6750 401 (or 400)
  res.end(`hello ${who.username}`);                                  // who: username, clientId, scopes, exp, jti …
}).listen(Number(process.env.PORT ?? 8080), '127.0.0.1', () => process.stdout.write('api listening\n'));
