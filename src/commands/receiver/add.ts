import { readFileSync } from 'node:fs';
import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { CliError, EXIT } from '../../cli/errors.js';
import { receiverAlgFlag, receiverEventsFlag, receiverRetentionFlag } from '../../cli/flags.js';
import { renderReceiverAdded } from '../../cli/render/receiver.js';
import type { ReceiverView } from '../../engine/receivers.js';

export default class ReceiverAdd extends BaseCommand<typeof ReceiverAdd> {
  static override summary = 'Register a receiver of security events (push or poll)';
  static override description = `Every revocation from then on (one token, a grant, --jti, --user, --client, a client deleted, a refresh token reused) is delivered to the receiver as a signed Security Event Token (RFC 8417), so that it can drop the introspection answers it cached. See docs/events.md.

Push (RFC 8935): every serve process POSTs each SET to the URL, which must be https:// (plain http:// only to 127.0.0.1, [::1] or localhost, for development). Refused, here and again by the deliverer on every address the host resolves to: link-local and cloud metadata addresses (169.254.0.0/16, fd00:ec2::254, metadata.google.internal), unspecified and multicast ones, the ports of non-HTTP services (22, 25, 6379 …), and private ones (loopback, 10/8, 172.16/12, 192.168/16, fc00::/7) unless --allow-private-network. The Authorization header to send comes from an environment variable or a file, never the command line; it is kept in the store and never shown again.

Poll (RFC 8936): the receiver POSTs to /events/poll, authenticated with HTTP Basic as the confidential client given with --client.

The SETs' "aud" is --audience, by default the push URL's origin (https://rs.example:8443) or the poll receiver's id.

A delivery still pending after --retention (24 hours by default; change it later with receiver update) becomes a dead letter, so that a receiver that stopped taking its events cannot grow the store without bound; receiver retry requeues dead letters.

--events and --alg choose its stream as an SSF receiver would (events_requested, checked as the SSF stream API checks it; ES256 or RS256): a CAEP receiver asks --events session-revoked --alg RS256.`;

  static override examples = [
    { description: 'Push to a resource server, with a bearer token it checks', command: 'RS_TOKEN="Bearer …" <%= config.bin %> <%= command.id %> api-gw --push https://api.example.com/events --authorization-env RS_TOKEN' },
    { description: 'A receiver that polls as client rs-1', command: '<%= config.bin %> <%= command.id %> rs-1 --poll --client rs-1' },
    { description: 'A CAEP receiver: session-revoked events, signed RS256', command: '<%= config.bin %> <%= command.id %> caep-rs --poll --client caep-rs --events session-revoked --alg RS256' },
    { description: 'A development receiver on this machine, with its own CA', command: '<%= config.bin %> <%= command.id %> dev --push https://127.0.0.1:9443/events --ca ./rs-ca.pem --allow-private-network' },
  ];

  static override args = { id: Args.string({ description: 'Receiver id (letters, digits, . _ -)', required: true }) };
  static override flags = {
    push: Flags.string({ description: 'Push (RFC 8935) to this https:// URL', helpValue: '<url>', exactlyOne: ['push', 'poll'] }),
    poll: Flags.boolean({ description: 'Poll (RFC 8936): the receiver polls POST /events/poll as --client', exactlyOne: ['push', 'poll'], dependsOn: ['client'] }),
    client: Flags.string({ description: 'Poll: the confidential client the receiver authenticates as', helpValue: '<client-id>', exclusive: ['push'] }),
    'authorization-env': Flags.string({ description: 'Push: send this environment variable\'s value as the Authorization header', helpValue: '<var>', exclusive: ['poll', 'authorization-file'] }),
    'authorization-file': Flags.string({ description: 'Push: send this file\'s content (trimmed) as the Authorization header', helpValue: '<file>', exclusive: ['poll'] }),
    ca: Flags.string({ description: 'Push: PEM file of a CA to trust for the endpoint, besides the system\'s', helpValue: '<file>', exclusive: ['poll'] }),
    'allow-private-network': Flags.boolean({ description: 'Push: the endpoint may be on a private network (loopback, RFC 1918, unique local addresses); link-local and metadata addresses stay refused', exclusive: ['poll'] }),
    audience: Flags.string({ description: 'The SETs\' aud [default: the push URL\'s origin, or the receiver id]', helpValue: '<aud>' }),
    retention: receiverRetentionFlag(),
    events: receiverEventsFlag(),
    alg: receiverAlgFlag(),
  };

  async run(): Promise<ReceiverView> {
    const f = this.flags;
    const engine = await this.engine();
    const common = { id: this.args.id, ...(f.audience !== undefined ? { audience: f.audience } : {}), ...(f.retention !== undefined ? { retentionMs: f.retention } : {}), ...(f.events !== undefined ? { eventsRequested: f.events } : {}), ...(f.alg !== undefined ? { alg: f.alg } : {}) };
    const receiver = f.push
      ? await engine.addReceiver({ ...common, delivery: 'push', endpointUrl: f.push, allowPrivateNetwork: f['allow-private-network'], ...this.authorization(), ...(f.ca ? { caPem: readFile(f.ca, '--ca') } : {}) }, this.actor())
      : await engine.addReceiver({ ...common, delivery: 'poll', clientId: f.client! }, this.actor());
    if (!this.jsonEnabled()) this.log(renderReceiverAdded(receiver));
    return receiver;
  }

  private authorization(): { authorization?: string } {
    const { 'authorization-env': env, 'authorization-file': file } = this.flags;
    if (env !== undefined) {
      const value = process.env[env];
      if (!value) throw new CliError(`--authorization-env: the environment variable ${env} is not set or empty`, EXIT.usage, 'usage');
      return { authorization: value };
    }
    if (file !== undefined) return { authorization: readFile(file, '--authorization-file').trim() };
    return {};
  }
}

function readFile(path: string, flag: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new CliError(`${flag}: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'})`, EXIT.usage, 'usage');
  }
}
