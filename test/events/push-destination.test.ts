import { lookup } from 'node:dns/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { recordedEndpoint, refusedHost, refusedPort } from '../../src/engine/push-destination.js';
import { InvalidInputError } from '../../src/engine/errors.js';
import { pushSet } from '../../src/events/push.js';
import type { ReceiverRecord } from '../../src/store/store.js';
import { makeEngine } from '../helpers/engine.js';

/**
 * A push receiver's URL cannot point the deliverer (inside serve) at the machine's own services:
 * cloud metadata, link-local, unspecified addresses and non-HTTP ports never; private networks
 * only when the operator says so. Checked at `receiver add` and again on every address the
 * deliverer's connection resolves to.
 */
const host = (url: string) => new URL(url).hostname;

// This machine's name resolves to a loopback address (Debian's /etc/hosts): a name that looked
// public when the receiver was added and resolves to a private address when the deliverer connects.
const name = hostname();
const loopbackName = await lookup(name, { all: true }).then(
  (addresses) => addresses.length > 0 && addresses.every((a) => a.address.startsWith('127.') || a.address === '::1'),
  () => false,
);

describe('which push destinations are refused', () => {
  it.each([
    ['http://169.254.169.254/latest/meta-data/', /link-local/],
    ['https://metadata.google.internal/computeMetadata/v1/', /cloud metadata/],
    ['https://metadata.google.internal./', /cloud metadata/],
    ['https://[fd00:ec2::254]/', /cloud metadata/],
    ['https://[::ffff:169.254.169.254]/', /link-local/],
    ['https://0.0.0.0/', /unspecified/],
    ['https://[::]/', /unspecified/],
    ['https://[fe80::1]/', /link-local/],
    ['https://224.0.0.1/', /multicast/],
  ])('%s: never, even on a private network', (url, why) => {
    expect(refusedHost(host(url), true)).toMatch(why);
  });

  it.each([['https://127.0.0.1/'], ['https://0x7f.1/'], ['https://localhost/'], ['https://api.localhost/'], ['https://10.1.2.3/'], ['https://172.20.0.1/'], ['https://192.168.1.10/'], ['https://100.64.0.1/'], ['https://[::1]/'], ['https://[fd12:3456::1]/'], ['https://[::ffff:10.0.0.1]/']])(
    '%s: private, allowed only with --allow-private-network',
    (url) => {
      expect(refusedHost(host(url), false)).toMatch(/allowed with --allow-private-network/);
      expect(refusedHost(host(url), true)).toBeUndefined();
    },
  );

  it('public addresses and names pass here (names are judged on what they resolve to)', () => {
    for (const url of ['https://203.0.113.7/', 'https://[2001:db8::1]/', 'https://rs.example.com/', 'https://8.8.8.8:8443/']) expect(refusedHost(host(url), false)).toBeUndefined();
  });

  it('refuses the ports of non-HTTP services', () => {
    for (const port of [22, 25, 6379, 2375, 10250]) expect(refusedPort(port)).toMatch(new RegExp(`port ${port}`));
    for (const port of [443, 80, 8443, 9443]) expect(refusedPort(port)).toBeUndefined();
  });
});

describe('receiver add --push', () => {
  const add = async (endpointUrl: string, allowPrivateNetwork?: boolean) => {
    const { engine } = makeEngine();
    return engine.addReceiver({ id: 'gw', delivery: 'push', endpointUrl, allowPrivateNetwork }, 'cli:test');
  };

  it('refuses metadata, link-local and unspecified addresses and port 22, also with --allow-private-network', async () => {
    for (const url of ['https://169.254.169.254/latest/meta-data/', 'https://metadata.google.internal/', 'https://[fd00:ec2::254]/', 'https://0.0.0.0/events', 'https://rs.example.com:22/events']) {
      await expect(add(url, true), url).rejects.toThrow(InvalidInputError);
      await expect(add(url, true), url).rejects.toThrow(/the push URL is refused/);
    }
  });

  it('refuses private addresses unless allowed, and records that they were', async () => {
    await expect(add('https://10.0.0.5/events')).rejects.toThrow(/10\.0\.0\.5 is a private address \(allowed with --allow-private-network\)/);
    await expect(add('http://127.0.0.1:9999/events')).rejects.toThrow(/loopback/);
    expect(await add('https://10.0.0.5/events', true)).toMatchObject({ endpoint_url: 'https://10.0.0.5/events', allow_private_network: true });
    expect(await add('https://rs.example.com/events')).toMatchObject({ endpoint_url: 'https://rs.example.com/events', allow_private_network: false });
  });
});

describe('the deliverer re-checks where it connects', () => {
  const servers: Server[] = [];
  afterEach(() => {
    for (const s of servers.splice(0)) s.close();
  });
  const record = (endpointUrl: string): ReceiverRecord => ({ id: 'gw', delivery: 'push', endpointUrl, authorization: null, caPem: null, clientId: null, audience: 'gw', createdAt: 0, retentionMs: 86_400_000 });

  async function receiver(): Promise<{ port: number; arrived: () => number }> {
    let arrived = 0;
    const server = createServer((req, res) => {
      arrived++;
      req.resume();
      res.writeHead(202).end();
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return { port: (server.address() as AddressInfo).port, arrived: () => arrived };
  }

  it('never connects to a metadata address stored before the check existed', async () => {
    const result = await pushSet(record('http://169.254.169.254/latest/meta-data/'), 'a.b.c', 2000);
    expect(result).toEqual({ kind: 'failed', error: expect.stringMatching(/^refused: 169\.254\.169\.254 is a link-local address/) });
  });

  it.skipIf(!loopbackName)('refuses a name that resolves to a private address at connect time (DNS rebinding), unless allowed', async () => {
    const rs = await receiver();
    const url = new URL(`http://${name}:${rs.port}/events`);
    expect(refusedHost(url.hostname, false)).toBeUndefined(); // what receiver add could see of it
    const refused = await pushSet(record(recordedEndpoint(url, false)), 'a.b.c', 2000);
    expect(refused).toEqual({ kind: 'failed', error: expect.stringMatching(new RegExp(`refused: ${name} resolves to 127\\.\\d+\\.\\d+\\.\\d+ is a loopback address`)) });
    expect(rs.arrived()).toBe(0);
    expect(await pushSet(record(recordedEndpoint(url, true)), 'a.b.c', 2000)).toEqual({ kind: 'accepted' });
    expect(rs.arrived()).toBe(1);
  });
});
