import type Database from 'better-sqlite3';
import { RETENTION_ERROR } from '../event-records.js';

/*
 * The bounded outbox on SQLite (docs/events.md): a receiver's deliveries pending longer than its
 * retention become dead letters, and `receiver retry` brings them back. A push receiver's are its
 * delivery rows. A poll receiver has no delivery rows, only its cursor and its marks (migration 5):
 * its expired rows get a dead delivery row each (which keeps their outbox rows from the purge, and
 * is what `receiver list` counts as dead) and are marked acknowledged, so the cursor moves past
 * them; a retry takes the marks away and moves the cursor back before the first of them.
 */

/** How many of a receiver's oldest pending rows a retention round looks at: the old ones are there. */
const SCAN = 5_000;

export function prepareRetention(db: Database.Database) {
  const p = (sql: string) => db.prepare(sql);
  const st = {
    receivers: p('SELECT id, delivery, acked_through AS cursor, retention_ms AS retention FROM receivers ORDER BY id'),
    expirePush: p(`UPDATE event_deliveries SET state = 'dead', last_error = @error
      WHERE receiver_id = @id AND state = 'pending' AND event_seq IN (
        SELECT d.event_seq FROM (SELECT event_seq FROM event_deliveries WHERE receiver_id = @id AND state = 'pending' ORDER BY event_seq LIMIT ${SCAN}) d
        JOIN security_events e ON e.seq = d.event_seq WHERE e.at < @cutoff ORDER BY d.event_seq LIMIT @limit)`),
    expiredPoll: p(`SELECT e.seq FROM (SELECT seq, at FROM security_events WHERE seq > @cursor ORDER BY seq LIMIT ${SCAN}) e
      WHERE e.at < @cutoff AND NOT EXISTS (SELECT 1 FROM poll_acks a WHERE a.receiver_id = @id AND a.event_seq = e.seq)
      ORDER BY e.seq LIMIT @limit`).pluck(true),
    deadRow: p(`INSERT OR IGNORE INTO event_deliveries (receiver_id, event_seq, state, attempts, next_attempt_at, last_error)
      VALUES (@id, @seq, 'dead', 0, 0, @error)`),
    mark: p('INSERT OR IGNORE INTO poll_acks (receiver_id, event_seq) VALUES (@id, @seq)'),
    // As ackDeliveries moves it: over every row marked from its place on (outbox-statements.ts).
    ackedThrough: p(`SELECT coalesce(
        (SELECT e.seq - 1 FROM security_events e WHERE e.seq > @after
           AND NOT EXISTS (SELECT 1 FROM poll_acks a WHERE a.receiver_id = @id AND a.event_seq = e.seq) ORDER BY e.seq LIMIT 1),
        (SELECT max(seq) FROM security_events), @after)`).pluck(true),
    moveCursor: p('UPDATE receivers SET acked_through = @through WHERE id = @id'),
    dropMarks: p('DELETE FROM poll_acks WHERE receiver_id = @id AND event_seq <= @through'),
    failed: p('UPDATE receivers SET last_error = ? WHERE id = ?'),
    deadSeqs: p("SELECT event_seq FROM event_deliveries WHERE receiver_id = ? AND state = 'dead' ORDER BY event_seq").pluck(true),
    // The rows between the first dead one and the cursor were acknowledged: marked, once the cursor goes back.
    remark: p(`INSERT OR IGNORE INTO poll_acks (receiver_id, event_seq)
      SELECT @id, seq FROM security_events WHERE seq >= @first AND seq <= @cursor
        AND seq NOT IN (SELECT event_seq FROM event_deliveries WHERE receiver_id = @id AND state = 'dead')`),
    unmarkDead: p("DELETE FROM poll_acks WHERE receiver_id = @id AND event_seq IN (SELECT event_seq FROM event_deliveries WHERE receiver_id = @id AND state = 'dead')"),
    dropDead: p("DELETE FROM event_deliveries WHERE receiver_id = ? AND state = 'dead'"),
  };

  return {
    /** OutboxStore.expireDeliveries, inside a write step. */
    expire(now: number, limit: number): number {
      let n = 0;
      for (const r of st.receivers.all() as { id: string; delivery: 'push' | 'poll'; cursor: number; retention: number }[]) {
        if (n >= limit) break;
        const where = { id: r.id, cutoff: now - r.retention, limit: limit - n, error: RETENTION_ERROR };
        let expired = 0;
        if (r.delivery === 'push') {
          expired = st.expirePush.run(where).changes;
        } else {
          const seqs = st.expiredPoll.all({ ...where, cursor: r.cursor }) as number[];
          for (const seq of seqs) {
            st.deadRow.run({ ...where, seq });
            st.mark.run({ id: r.id, seq });
          }
          expired = seqs.length;
          if (expired > 0) {
            const through = st.ackedThrough.get({ id: r.id, after: r.cursor }) as number;
            st.moveCursor.run({ id: r.id, through });
            st.dropMarks.run({ id: r.id, through });
          }
        }
        if (expired > 0) st.failed.run(RETENTION_ERROR, r.id);
        n += expired;
      }
      return n;
    },

    /**
     * A poll receiver's dead letters pending again: unmarked, the cursor back before the first
     * of them, the rows it passed since marked acknowledged. Returns how many; inside a write step.
     */
    retryPoll(id: string, cursor: number): number {
      const seqs = st.deadSeqs.all(id) as number[];
      if (seqs.length === 0) return 0;
      const first = seqs[0]!;
      if (first <= cursor) {
        st.remark.run({ id, first, cursor });
        st.moveCursor.run({ id, through: first - 1 });
      }
      st.unmarkDead.run({ id });
      st.dropDead.run(id);
      return seqs.length;
    },
  };
}
