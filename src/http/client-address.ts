import type { IncomingMessage } from 'node:http';
import proxyAddr from '@fastify/proxy-addr';

/** Whether the hop at `address` (`hop` 0 is the socket's peer) is a proxy whose `X-Forwarded-For` is believed. */
export type TrustProxy = (address: string, hop: number) => boolean;

/**
 * The proxies `serve --trust-proxy` names: addresses, CIDR ranges, or proxy-addr's names
 * `loopback`, `linklocal` and `uniquelocal`. Throws a TypeError naming a value that is none of
 * these. fastify is handed the function this returns (its `trustProxy`), and the fast path reads
 * the client's address through it too, so both doors see the same address.
 */
export function trustedProxies(values: readonly string[]): TrustProxy {
  return proxyAddr.compile([...values]);
}

/**
 * The address of the client behind `req`, as fastify's `request.ip` computes it: without trusted
 * proxies, the socket's peer; with them, the nearest address in `X-Forwarded-For` that is not a
 * trusted proxy, walking from the socket towards the client (proxy-addr, as Express does), so a
 * client cannot choose its own address by sending the header itself.
 */
export function clientAddress(req: IncomingMessage, trust: TrustProxy | undefined): string | undefined {
  if (trust === undefined) return req.socket.remoteAddress;
  return proxyAddr(req, trust);
}
