import type { AuditEntry } from './audit.js';
import type { RevocationEvent } from './event-records.js';

/**
 * What a change writes beside itself, in its own transaction: its audit line, and, for a change
 * that revokes tokens, its security event (docs/events.md). One value, required by every write
 * that can leave one, so that no write forgets it and a new fact of the trail is one member here.
 * A store writes a trail only when the change changed something: the audit line's `count` is then
 * set to how many, and the event goes out with one delivery per registered receiver (none
 * registered: nothing is written). `{}`: the change leaves none (a record `migrate` copies, the
 * health probe's write check).
 */
export interface Trail {
  audit?: AuditEntry;
  event?: RevocationEvent;
}
