import { X509Certificate } from 'node:crypto';
import { DEFAULT_RETENTION_MS, DuplicateReceiverError, type ClientRecord, type ReceiverChange, type ReceiverRecord, type ReceiverStatus } from '../store/store.js';
import { auditLine } from './audit.js';
import type { EngineContext } from './context.js';
import { AccessDeniedError, InvalidInputError, NotFoundError } from './errors.js';
import { pushDestination, recordedEndpoint, refusedHost, refusedPort } from './push-destination.js';
import { checkAlg, checkEventsRequested, eventsDelivered, streamJson, streamSettingsOf, type StreamStatus } from './stream-settings.js';
import type { SetAlg } from './signing-keys.js';
import type { ClientStore, OutboxStore } from '../store/store.js';

/** The store ports this module uses (store/ports/). */
type Ports = ClientStore & OutboxStore;

/**
 * Receivers of security events (docs/events.md): the resource servers told of every revocation, by
 * push (RFC 8935: tokenctl POSTs each SET to their endpoint) or poll (RFC 8936: they POST to
 * tokenctl's poll endpoint as a registered client). Registered by the operator with the CLI.
 */

/** Letters, digits, `.`, `_`, `-`; 1 to 64 characters. */
const RECEIVER_ID = /^[A-Za-z0-9._-]{1,64}$/;
/** Plain http:// is accepted only to these hosts (development: a receiver on this machine). */
const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

export type AddReceiverInput =
  | ({
      id: string;
      delivery: 'push';
      endpointUrl: string;
      /** The Authorization header value to send; never printed. */
      authorization?: string;
      /** PEM of a CA to trust for the endpoint, besides the system's. */
      caPem?: string;
      audience?: string;
      /** Whether the endpoint may be on a private network (loopback, RFC 1918, unique local); link-local and metadata addresses never. */
      allowPrivateNetwork?: boolean;
      /** SSF stream settings (engine/streams.ts), JSON; none for an operator's receiver. */
      stream?: string;
      retentionMs?: number;
    } & StreamChoice)
  | ({ id: string; delivery: 'poll'; clientId: string; audience?: string; stream?: string; retentionMs?: number } & StreamChoice);

/** What an operator may choose of a receiver's stream (`--events`, `--alg`), checked as the SSF stream API checks it. */
export interface StreamChoice {
  /** SSF `events_requested` [default: tokenctl's own event]. */
  eventsRequested?: string[];
  /** The JWS algorithm of its SETs [default: ES256]. */
  alg?: string;
}

/** A receiver's retention: from a minute (a test bed) to 90 days; default {@link DEFAULT_RETENTION_MS}. */
export const MIN_RETENTION_MS = 60_000;
export const MAX_RETENTION_MS = 90 * 86_400_000;

/** A receiver as the CLI shows it: never its Authorization value, nor its CA's PEM. */
export interface ReceiverView {
  id: string;
  delivery: 'push' | 'poll';
  endpoint_url: string | null;
  client_id: string | null;
  audience: string;
  /** Whether an Authorization header is sent (its value is never shown). */
  authorization: boolean;
  /** Whether a CA of its own is trusted for the endpoint. */
  ca: boolean;
  /** push: whether the endpoint may be on a private network (`--allow-private-network`). */
  allow_private_network: boolean;
  /** How long a delivery may stay pending before it becomes a dead letter (ms). */
  retention_ms: number;
  /** Its stream (SSF 1.0 §8.1.1, §8.1.2): the events asked for, those delivered, the SETs' algorithm, its status. */
  events_requested: string[];
  events_delivered: string[];
  signing_alg: SetAlg;
  status: StreamStatus;
  created_at: number;
}

/** A receiver and how its deliveries stand (`receiver list`). */
export interface ReceiverStatusView extends ReceiverView {
  pending: number;
  dead: number;
  oldest_pending_at: number | null;
  last_error: string | null;
  last_delivered_at: number | null;
}

export function receiverView(r: ReceiverRecord): ReceiverView {
  const destination = r.endpointUrl === null ? null : pushDestination(r.endpointUrl);
  return {
    id: r.id,
    delivery: r.delivery,
    endpoint_url: destination?.url ?? null,
    client_id: r.clientId,
    audience: r.audience,
    authorization: r.authorization !== null,
    ca: r.caPem !== null,
    allow_private_network: destination?.allowPrivateNetwork ?? false,
    retention_ms: r.retentionMs,
    ...streamView(r.stream),
    created_at: r.createdAt,
  };
}

function streamView(stream: string | null | undefined): Pick<ReceiverView, 'events_requested' | 'events_delivered' | 'signing_alg' | 'status'> {
  const s = streamSettingsOf(stream);
  return { events_requested: s.eventsRequested, events_delivered: eventsDelivered(s), signing_alg: s.alg, status: s.status };
}

/** A receiver's stream settings with the operator's choice applied (the others as they were), or undefined if it chose nothing. */
function chosenStream(stream: string | null | undefined, choice: StreamChoice): string | undefined {
  if (choice.eventsRequested === undefined && choice.alg === undefined) return undefined;
  const s = streamSettingsOf(stream);
  if (choice.eventsRequested !== undefined) s.eventsRequested = checkEventsRequested(choice.eventsRequested, '--events');
  if (choice.alg !== undefined) s.alg = checkAlg(choice.alg, '--alg');
  return streamJson(s);
}

function statusView(s: ReceiverStatus): ReceiverStatusView {
  return {
    ...receiverView(s),
    pending: s.pending,
    dead: s.dead,
    oldest_pending_at: s.oldestPendingAt,
    last_error: s.lastError,
    last_delivered_at: s.lastDeliveredAt,
  };
}

/**
 * A push endpoint: https://, or http:// to this machine only (development). No credentials in it;
 * not a port or an address of {@link refusedHost}'s (cloud metadata, link-local, unspecified,
 * multicast, and private ones unless `allowPrivateNetwork`).
 */
export function checkPushUrl(value: string, allowPrivateNetwork = false): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidInputError(`the push URL "${value}" is not a URL`);
  }
  if (url.protocol === 'http:' && !LOOPBACK_HOSTS.has(url.hostname)) {
    throw new InvalidInputError('the push URL must be https:// (plain http:// only to 127.0.0.1, [::1] or localhost, for development)');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new InvalidInputError('the push URL must be https://');
  if (url.username !== '' || url.password !== '') throw new InvalidInputError('the push URL must not hold credentials: use --authorization-env or --authorization-file');
  if (url.hash !== '') throw new InvalidInputError('the push URL must not have a #fragment');
  const refused = refusedPort(Number(url.port || (url.protocol === 'https:' ? 443 : 80))) ?? refusedHost(url.hostname, allowPrivateNetwork);
  if (refused !== undefined) throw new InvalidInputError(`the push URL is refused: ${refused}`);
  return url;
}

function checkAuthorization(value: string): string {
  const v = value.trim();
  if (v === '' || v.length > 4096 || /[\r\n\0]/.test(v)) {
    throw new InvalidInputError('the Authorization value must be one line of 1 to 4096 characters (e.g. "Bearer …")');
  }
  return v;
}

function checkCa(pem: string): string {
  try {
    new X509Certificate(pem);
  } catch {
    throw new InvalidInputError('the CA file is not a PEM certificate');
  }
  return pem;
}

function checkRetention(value: number | undefined): number {
  if (value === undefined) return DEFAULT_RETENTION_MS;
  if (!Number.isInteger(value) || value < MIN_RETENTION_MS || value > MAX_RETENTION_MS) throw new InvalidInputError('the retention must be from 1m to 90d');
  return value;
}

function checkAudience(value: string | undefined, fallback: string): string {
  if (value === undefined) return fallback;
  if (value.trim() === '' || value.length > 512) throw new InvalidInputError('the audience must be 1 to 512 characters');
  return value;
}

/**
 * Registers a receiver. The SETs' `aud` is `audience`, by default the push endpoint's origin
 * (`https://rs.example:8443`) or, for poll, the receiver's id.
 */
export async function addReceiver(ctx: EngineContext<Ports>, input: AddReceiverInput, actor: string): Promise<ReceiverView> {
  if (!RECEIVER_ID.test(input.id)) throw new InvalidInputError(`receiver id "${input.id}" must be 1 to 64 letters, digits, ".", "_" or "-"`);
  let record: ReceiverRecord;
  if (input.delivery === 'push') {
    const url = checkPushUrl(input.endpointUrl, input.allowPrivateNetwork);
    record = {
      id: input.id,
      delivery: 'push',
      endpointUrl: recordedEndpoint(url, input.allowPrivateNetwork === true),
      authorization: input.authorization === undefined ? null : checkAuthorization(input.authorization),
      caPem: input.caPem === undefined ? null : checkCa(input.caPem),
      clientId: null,
      audience: checkAudience(input.audience, url.origin),
      createdAt: ctx.clock.now(),
      stream: input.stream ?? chosenStream(null, input) ?? null,
      retentionMs: checkRetention(input.retentionMs),
    };
  } else {
    const client = await ctx.store.getClient(input.clientId);
    if (!client) throw new NotFoundError(`no client with id "${input.clientId}": a poll receiver authenticates as a registered client`);
    if (client.secretHash === null) throw new InvalidInputError(`client "${input.clientId}" is public: a poll receiver must authenticate with a secret (a confidential client)`);
    const other = await ctx.store.findPollReceiver(client.id);
    if (other) throw new InvalidInputError(`client "${client.id}" already polls as receiver "${other.id}": one poll receiver per client`);
    record = { id: input.id, delivery: 'poll', endpointUrl: null, authorization: null, caPem: null, clientId: client.id, audience: checkAudience(input.audience, input.id), createdAt: ctx.clock.now(), stream: input.stream ?? chosenStream(null, input) ?? null, retentionMs: checkRetention(input.retentionMs) };
  }
  try {
    await ctx.store.createReceiver(record, { audit: auditLine(ctx, actor, 'receiver.add', `receiver:${record.id}`, 1, record.delivery) });
  } catch (err) {
    if (err instanceof DuplicateReceiverError) throw new InvalidInputError(err.message);
    throw err;
  }
  return receiverView(record);
}

export async function listReceivers(ctx: EngineContext<Ports>): Promise<ReceiverStatusView[]> {
  return (await ctx.store.listReceivers()).map(statusView);
}

/** One receiver and how its deliveries stand, or NotFoundError. */
export async function receiverStatus(ctx: EngineContext<Ports>, id: string): Promise<ReceiverStatusView> {
  const found = (await ctx.store.listReceivers()).find((r) => r.id === id);
  if (!found) throw new NotFoundError(`no receiver with id "${id}"`);
  return statusView(found);
}

/**
 * Changes a receiver (`receiver update`): its retention, applied from the next housekeeping on,
 * and its stream's events and algorithm, applied from its next SET. One store call with one audit
 * line naming what changed: the whole change is made, or (a failure) none of it.
 */
export async function updateReceiver(ctx: EngineContext<Ports>, id: string, change: { retentionMs?: number } & StreamChoice, actor: string): Promise<ReceiverStatusView> {
  if (change.retentionMs === undefined && change.eventsRequested === undefined && change.alg === undefined) throw new InvalidInputError('nothing to change: give --retention, --events or --alg');
  const r = await ctx.store.getReceiver(id);
  if (!r) throw new NotFoundError(`no receiver with id "${id}"`);
  const retentionMs = change.retentionMs === undefined ? undefined : checkRetention(change.retentionMs);
  const stream = chosenStream(r.stream, change);
  const what: string[] = [];
  if (stream !== undefined) {
    const s = streamSettingsOf(stream);
    what.push(`events ${s.eventsRequested.join(' ')}; alg ${s.alg}`);
  }
  if (retentionMs !== undefined) what.push(`retention ${retentionMs} ms`);
  const line = auditLine(ctx, actor, 'receiver.update', `receiver:${id}`, 1, what.join('; '));
  // Only what the operator chose: the endpoint, and the stream when unchanged, stay as they are in the store.
  const storeChange: ReceiverChange = { ...(stream !== undefined ? { stream } : {}), ...(retentionMs !== undefined ? { retentionMs } : {}) };
  if (!(await ctx.store.updateReceiver(id, storeChange, { audit: line }))) throw new NotFoundError(`no receiver with id "${id}"`);
  return receiverStatus(ctx, id);
}

/** Removes a receiver with its pending and dead deliveries. */
export async function removeReceiver(ctx: EngineContext<Ports>, id: string, actor: string): Promise<void> {
  if (!(await ctx.store.deleteReceiver(id, { audit: auditLine(ctx, actor, 'receiver.remove', `receiver:${id}`, 1, '') }))) throw new NotFoundError(`no receiver with id "${id}"`);
}

/** Requeues a receiver's dead letters, due now. Returns how many. */
export async function retryReceiver(ctx: EngineContext<Ports>, id: string, actor: string): Promise<number> {
  if (!(await ctx.store.getReceiver(id))) throw new NotFoundError(`no receiver with id "${id}"`);
  // The line's count is how many the store requeued.
  return ctx.store.retryDead(id, ctx.clock.now(), { audit: auditLine(ctx, actor, 'receiver.retry', `receiver:${id}`, 0, 'dead deliveries requeued') });
}

/**
 * RFC 8936 §2.4 / SSF: the poll receiver that `client` polls as, or AccessDeniedError. The client
 * has been authenticated (spec part 5) by the caller, as at the introspection endpoint.
 */
export async function pollReceiverOf(ctx: EngineContext<Ports>, client: ClientRecord): Promise<ReceiverRecord> {
  const receiver = await ctx.store.findPollReceiver(client.id);
  if (!receiver) throw new AccessDeniedError(`client "${client.id}" is not registered as a poll receiver (tokenctl receiver add ID --poll --client ${client.id})`);
  return receiver;
}
