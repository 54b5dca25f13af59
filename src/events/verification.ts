import { streamSettingsOf } from '../engine/stream-settings.js';
import type { ReceiverRecord } from '../store/store.js';
import type { SigningKeys } from './keys.js';
import { pushSet, type PushResult } from './push.js';
import { signClaims, verificationClaims } from './set.js';

/** How often a verification event is tried on a push stream, and the wait after each failure. */
const ATTEMPTS = 3;
const RETRY_MS = 1_000;

/**
 * SSF 1.0 §8.1.4.2 on a push stream: the verification event POSTed to the stream's endpoint
 * (RFC 8935), signed with the stream's algorithm, tried a few times and not kept in the outbox
 * (a receiver that missed it asks again). Resolves with the last answer; never throws. A poll
 * stream's verification waits in its settings for the next poll instead (events/poll.ts).
 */
export async function pushVerification(
  deps: { keys: SigningKeys; issuer: string; push?: typeof pushSet; now?: () => number },
  stream: ReceiverRecord,
  jti: string,
  state: string | undefined,
): Promise<PushResult> {
  const now = deps.now ?? Date.now;
  const push = deps.push ?? pushSet;
  let result: PushResult = { kind: 'failed', error: 'not tried' };
  try {
    const key = await deps.keys.current(streamSettingsOf(stream.stream).alg);
    const set = signClaims(verificationClaims(jti, deps.issuer, stream.audience, stream.id, state, now()), key);
    for (let i = 0; i < ATTEMPTS; i++) {
      result = await push(stream, set);
      if (result.kind !== 'failed') return result;
      await new Promise((resolve) => setTimeout(resolve, RETRY_MS * (i + 1)).unref());
    }
  } catch (err) {
    result = { kind: 'failed', error: err instanceof Error ? err.message : String(err) };
  }
  return result;
}
