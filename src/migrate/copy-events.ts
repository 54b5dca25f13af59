import { DuplicateReceiverError, type ReceiverRecord, type ReceiverStatus, type TokenStore } from '../store/store.js';
import { MAX_LISTED, noCounts, type CopyCounts, type Verifier } from './verify.js';

/*
 * The security events part of a migration (docs/events.md): the receivers and the signing keys, so
 * that the receivers go on getting events from the new store, signed by keys whose JWKS they may
 * have cached. Not the outbox: events not yet delivered (pending, and dead letters) stay in the
 * source, and are counted in the report, so that an operator drains them first (push receivers
 * caught up, poll receivers' acknowledgements in) or tells the receivers.
 */

/** What a migration did with the security events part of the source. */
export interface EventsCopy {
  receivers: CopyCounts;
  /** Copied only into a target without signing keys of its own (then all, with their retirement times). */
  signingKeys: CopyCounts;
  /** Deliveries of the source's receivers not delivered yet (pending and dead): never copied. */
  deliveriesNotCopied: number;
}

/**
 * Copies the receivers (their delivery state excepted) and, into a target with no signing key, the
 * signing keys, verifying each copy as the clients and tokens are. A source with neither leaves
 * the target untouched. Receivers the target has already (same id) are left as they are.
 */
export async function copyEvents(source: TokenStore, target: TokenStore, verify: Verifier): Promise<EventsCopy> {
  const [receivers, keys] = await Promise.all([source.listReceivers(), source.listSigningKeys()]);
  const copy: EventsCopy = {
    receivers: noCounts(receivers.length),
    signingKeys: noCounts(keys.length),
    deliveriesNotCopied: receivers.reduce((n, r) => n + r.pending + r.dead, 0),
  };
  for (const status of receivers) {
    const receiver = recordOf(status);
    let preexisting = false;
    try {
      await target.createReceiver(receiver, {});
      copy.receivers.copied++;
    } catch (error) {
      if (!(error instanceof DuplicateReceiverError)) throw error;
      preexisting = true;
    }
    verify.check(`receiver ${receiver.id}`, receiver, (await target.getReceiver(receiver.id)) ?? undefined, preexisting, copy.receivers);
  }
  if (keys.length === 0) return copy;
  const held = new Set((await target.listSigningKeys()).map((k) => k.kid));
  if (held.size > 0) {
    // Adding a key makes it the target's current one: never over a target's own keys.
    copy.signingKeys.present = keys.filter((k) => held.has(k.kid)).length;
    for (const k of keys.filter((k) => !held.has(k.kid))) {
      if (verify.differences.length < MAX_LISTED) verify.differences.push(`signing key ${k.kid}: not copied, the target has signing keys of its own`);
    }
    return copy;
  }
  // Oldest first: each key added retires the one before at its own creation time, as in the source.
  for (const key of [...keys].reverse()) {
    if (!(await target.addSigningKey({ ...key, retiredAt: null }, copy.signingKeys.copied === 0 ? null : undefined, {}))) break; // a server on the target made one meanwhile
    copy.signingKeys.copied++;
  }
  const copies = new Map((await target.listSigningKeys()).map((k) => [k.kid, k]));
  for (const key of keys) verify.check(`signing key ${key.kid}`, key, copies.get(key.kid), false, copy.signingKeys);
  return copy;
}

/** The receiver as registered, without its delivery counts. */
function recordOf(status: ReceiverStatus): ReceiverRecord {
  const { id, delivery, endpointUrl, authorization, caPem, clientId, audience, createdAt, retentionMs, stream } = status;
  return { id, delivery, endpointUrl, authorization, caPem, clientId, audience, createdAt, retentionMs, stream: stream ?? null };
}
