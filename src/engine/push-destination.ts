/**
 * Where tokenctl may push security events (RFC 8935), so that a receiver's URL cannot point the
 * deliverer, which runs inside `serve`, at the machine's own services (server-side request
 * forgery, OWASP SSRF prevention cheat sheet): checked when a receiver is added, on the URL's host
 * and port, and again by the deliverer on every address its host resolves to, just before it
 * connects (a name may resolve elsewhere by then: DNS rebinding).
 */

/** Never a push destination, whatever the operator allows: nothing there is a resource server. */
type Refused = { refused: 'never'; why: string } | { refused: 'private'; why: string } | { refused: false };

/**
 * Ports of services that are not an HTTP receiver but could act on a POST (SSH, mail, DNS, file
 * sharing, Docker's and the kubelet's APIs, etcd, Redis): refused, private network or not.
 */
export const REFUSED_PORTS: ReadonlySet<number> = new Set([0, 21, 22, 23, 25, 53, 110, 143, 445, 2375, 2376, 2379, 2380, 6379, 10250]);

/** Cloud metadata services by name (GCP's, AWS's instance-data); their addresses are below. */
const METADATA_NAMES = new Set(['metadata', 'metadata.google.internal', 'metadata.goog', 'instance-data', 'instance-data.ec2.internal']);

/** The fragment that marks a stored endpoint registered with `--allow-private-network` (an operator's URL may not have one). */
const PRIVATE_NETWORK_MARK = '#allow-private-network';

/** The stored form of a push endpoint: its URL, and whether private addresses were allowed for it. */
export function recordedEndpoint(url: URL, allowPrivateNetwork: boolean): string {
  const href = new URL(url.href);
  href.hash = '';
  return href.href + (allowPrivateNetwork ? PRIVATE_NETWORK_MARK : '');
}

/** A stored push endpoint read back: the URL to POST to, and whether it may be on a private network. */
export function pushDestination(stored: string): { url: string; allowPrivateNetwork: boolean } {
  const allowPrivateNetwork = stored.endsWith(PRIVATE_NETWORK_MARK);
  return { url: allowPrivateNetwork ? stored.slice(0, -PRIVATE_NETWORK_MARK.length) : stored, allowPrivateNetwork };
}

/** Why `port` may not be pushed to, or undefined. */
export function refusedPort(port: number): string | undefined {
  return REFUSED_PORTS.has(port) ? `port ${port} is not a push receiver's (refused: ${[...REFUSED_PORTS].join(', ')})` : undefined;
}

/**
 * Why a URL's host (WHATWG-normalised: a dotted IPv4 address, a bracketed IPv6 one, or a lower-case
 * name) may not be pushed to, or undefined. A name other than the metadata services' and
 * `localhost` passes here: the addresses it resolves to are judged at each connection.
 */
export function refusedHost(host: string, allowPrivateNetwork: boolean): string | undefined {
  const name = host.replace(/\.$/, '');
  if (METADATA_NAMES.has(name)) return `${name} is a cloud metadata service`;
  if (name === 'localhost' || name.endsWith('.localhost')) return refusedAddress('127.0.0.1', allowPrivateNetwork)?.replace('127.0.0.1', name);
  if (name.startsWith('[') || /^\d+\.\d+\.\d+\.\d+$/.test(name)) return refusedAddress(name.replace(/^\[|\]$/g, ''), allowPrivateNetwork);
  return undefined;
}

/** Why an IP address (as the URL parser or `dns.lookup` writes it) may not be pushed to, or undefined. */
export function refusedAddress(address: string, allowPrivateNetwork: boolean): string | undefined {
  const verdict = classify(address);
  if (verdict.refused === 'never' || (verdict.refused === 'private' && !allowPrivateNetwork)) {
    return `${address} is ${verdict.why}${verdict.refused === 'private' ? ' (allowed with --allow-private-network)' : ''}`;
  }
  return undefined;
}

function classify(address: string): Refused {
  const v4 = ipv4(address);
  if (v4 !== undefined) return classifyV4(v4);
  const v6 = ipv6(address);
  if (v6 === undefined) return { refused: 'never', why: 'not an IP address' };
  const [a, b, c, d, e, f, g, h] = v6;
  const embedded = ((g! << 16) | h!) >>> 0;
  // IPv4-mapped (::ffff:0:0/96) and NAT64 (64:ff9b::/96): the IPv4 address inside is what is reached.
  if (a === 0 && b === 0 && c === 0 && d === 0 && e === 0 && f === 0xffff) return classifyV4(embedded);
  if (a === 0x64 && b === 0xff9b && c === 0 && d === 0 && e === 0 && f === 0) return classifyV4(embedded);
  if (v6.every((x) => x === 0)) return { refused: 'never', why: 'the unspecified address' };
  if (v6.slice(0, 7).every((x) => x === 0) && h === 1) return { refused: 'private', why: 'a loopback address' };
  if ((a! & 0xffc0) === 0xfe80) return { refused: 'never', why: 'a link-local address' };
  if ((a! & 0xff00) === 0xff00) return { refused: 'never', why: 'a multicast address' };
  // AWS's instance metadata service over IPv6.
  if (a === 0xfd00 && b === 0xec2 && c === 0 && d === 0 && e === 0 && f === 0 && g === 0 && h === 0x254) return { refused: 'never', why: 'a cloud metadata service' };
  if ((a! & 0xfe00) === 0xfc00) return { refused: 'private', why: 'a unique local (private) address' };
  return { refused: false };
}

function classifyV4(n: number): Refused {
  const inRange = (base: string, bits: number) => bits === 0 || n >>> (32 - bits) === ipv4(base)! >>> (32 - bits);
  if (inRange('0.0.0.0', 8)) return { refused: 'never', why: 'the unspecified address' };
  if (inRange('169.254.0.0', 16)) return { refused: 'never', why: 'a link-local address (where cloud metadata services answer)' };
  if (n === ipv4('100.100.100.200')) return { refused: 'never', why: 'a cloud metadata service' };
  if (inRange('224.0.0.0', 4) || inRange('240.0.0.0', 4)) return { refused: 'never', why: 'a multicast or reserved address' };
  if (inRange('127.0.0.0', 8)) return { refused: 'private', why: 'a loopback address' };
  for (const [base, bits] of [['10.0.0.0', 8], ['172.16.0.0', 12], ['192.168.0.0', 16], ['100.64.0.0', 10], ['198.18.0.0', 15], ['192.0.0.0', 24]] as const) {
    if (inRange(base, bits)) return { refused: 'private', why: 'a private address' };
  }
  return { refused: false };
}

/** A dotted IPv4 address as a 32-bit number, or undefined. */
function ipv4(s: string): number | undefined {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(s);
  if (!m) return undefined;
  const parts = m.slice(1).map(Number);
  if (parts.some((p) => p > 255)) return undefined;
  return ((parts[0]! << 24) | (parts[1]! << 16) | (parts[2]! << 8) | parts[3]!) >>> 0;
}

/** An IPv6 address (`::` shorthand, a dotted IPv4 tail, a `%zone` allowed) as its eight groups, or undefined. */
function ipv6(s: string): number[] | undefined {
  let text = s.split('%')[0]!.toLowerCase();
  const tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (tail) {
    const v4 = ipv4(tail[1]!);
    if (v4 === undefined) return undefined;
    text = text.slice(0, -tail[1]!.length) + `${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const groups = (part: string) => (part === '' ? [] : part.split(':'));
  const left = groups(halves[0]!);
  const right = halves.length === 2 ? groups(halves[1]!) : [];
  const missing = 8 - left.length - right.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined;
  const all = [...left, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...right];
  if (!all.every((g) => /^[0-9a-f]{1,4}$/.test(g))) return undefined;
  return all.map((g) => parseInt(g, 16));
}
