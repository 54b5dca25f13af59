import type Database from 'better-sqlite3';

/*
 * The SQL of the SQLite outbox, its receivers and its signing keys (outbox-store.ts), prepared
 * once per connection.
 */

const RECEIVER_COLUMNS = `r.id, r.delivery, r.endpoint_url AS endpointUrl, r.authorization, r.ca_pem AS caPem,
  r.client_id AS clientId, r.audience, r.created_at AS createdAt, r.stream, r.retention_ms AS retentionMs`;
const KEY_COLUMNS = 'kid, alg, private_jwk AS privateJwk, public_jwk AS publicJwk, created_at AS createdAt, retired_at AS retiredAt';
/**
 * Push receivers nobody holds (no lease, or one that ended by @now), not paused (the generated
 * column of migration 11, read from the stream's JSON), whose oldest pending delivery is due at @now.
 */
const DUE_PUSH = `SELECT r.id FROM receivers r
  WHERE r.delivery = 'push' AND (r.lease_owner IS NULL OR r.lease_until <= @now)
    AND NOT r.paused
    AND (SELECT d.next_attempt_at FROM event_deliveries d WHERE d.receiver_id = r.id AND d.state = 'pending'
         ORDER BY d.event_seq LIMIT 1) <= @now
  ORDER BY r.id LIMIT @limit`;
/**
 * A pending delivery @deliveryId (its outbox row's id: its first event's) of push receiver
 * @receiverId, while @owner holds the receiver's lease. The outbox has no index by id: the row is
 * found among the receiver's pending deliveries, oldest first, where the deliverer took it from.
 */
const SETTLEABLE = `receiver_id = @receiverId AND state = 'pending'
  AND event_seq = (SELECT d.event_seq FROM event_deliveries d JOIN security_events e ON e.seq = d.event_seq
                   WHERE d.receiver_id = @receiverId AND d.state = 'pending' AND e.id = @deliveryId LIMIT 1)
  AND EXISTS (SELECT 1 FROM receivers WHERE id = @receiverId AND lease_owner = @owner)`;

/**
 * A poll receiver's pending outbox rows, oldest first: those after its cursor (acked_through: every
 * row up to it acknowledged) that it has not acknowledged out of order (poll_acks). The payload
 * comes as bytes (its UTF-8: a store tokenctl made is UTF-8), see contentOf.
 */
const POLL_PENDING = `SELECT 0, e.id, CAST(e.payload AS BLOB), e.seq FROM receivers r JOIN security_events e ON e.seq > r.acked_through
  WHERE r.id = @receiverId AND NOT EXISTS (SELECT 1 FROM poll_acks a WHERE a.receiver_id = r.id AND a.event_seq = e.seq)
  ORDER BY e.seq LIMIT @limit`;

/**
 * Up to @limit outbox rows nobody waits for, oldest first: rows no poll receiver has left to
 * acknowledge (at or below every poll receiver's cursor) and older than every push receiver's
 * oldest pending delivery (its first pending row by the key), but for the rows of dead letters
 * (their partial index). A row that is delivered everywhere waits while some receiver has an older
 * one pending: the outbox keeps at most what the slowest receiver has not taken yet.
 */
const PURGE = `DELETE FROM security_events WHERE seq IN (
  SELECT seq FROM security_events
  WHERE seq <= coalesce((SELECT min(acked_through) FROM receivers WHERE delivery = 'poll'), 9223372036854775807)
    AND seq < coalesce((SELECT min((SELECT d.event_seq FROM event_deliveries d WHERE d.receiver_id = r.id AND d.state = 'pending'
                                    ORDER BY d.event_seq LIMIT 1)) FROM receivers r WHERE r.delivery = 'push'), 9223372036854775807)
    AND seq NOT IN (SELECT event_seq FROM event_deliveries WHERE state = 'dead')
  ORDER BY seq LIMIT @limit)`;

/**
 * How far an acknowledgement's ids are looked for after a poll receiver's cursor, in outbox rows
 * (one pass for all of them).
 * A poll answer takes its SETs from the first MERGE_READ_ROWS pending rows, and the cursor only
 * moves forward: an id it handed out is within these (the rows acknowledged out of order between
 * count too, hence the margin). An id not found there is not acknowledged: that SET comes again.
 */
const ACK_SCAN_ROWS = 20_000;

export function prepareEventStatements(db: Database.Database) {
  const p = (sql: string) => db.prepare(sql);
  return {
    // The end of a transaction with revocations: one look at a small table. NULL: no receiver
    // (nothing is written); 0: poll receivers only (no delivery rows); 1: a push receiver too.
    receiverKinds: p("SELECT max(delivery = 'push') FROM receivers").pluck(true),
    // Its seq above every row's and every poll cursor's, even once purged rows took the largest seq
    // away: a poll receiver's cursor never covers a row it has not seen.
    insertEvent: p(`INSERT INTO security_events (seq, id, at, payload) VALUES (
      max(coalesce((SELECT max(seq) FROM security_events), 0), coalesce((SELECT max(acked_through) FROM receivers), 0)) + 1, ?, ?, ?)`),
    // A delivery row per push receiver; a poll receiver has its cursor instead (POLL_PENDING).
    fanOut: p(`INSERT INTO event_deliveries (receiver_id, event_seq, state, attempts, next_attempt_at)
      SELECT id, ?, 'pending', 0, ? FROM receivers WHERE delivery = 'push'`),

    // A poll receiver starts after the newest outbox row: it gets the events of later revocations.
    insertReceiver: p(`INSERT INTO receivers (id, delivery, endpoint_url, authorization, ca_pem, client_id, audience, created_at, stream, retention_ms, acked_through)
      VALUES (@id, @delivery, @endpointUrl, @authorization, @caPem, @clientId, @audience, @createdAt, @stream, @retentionMs,
              CASE WHEN @delivery = 'poll' THEN (SELECT coalesce(max(seq), 0) FROM security_events) ELSE 0 END)`),
    // A ReceiverChange in one statement: @set* (1 or 0) say which of the nullable fields it names; a null @retentionMs keeps the retention.
    // @checkStream: only if the stream is still @ifStream (IS: null equals null).
    updateReceiver: p(`UPDATE receivers SET
        endpoint_url = CASE WHEN @setEndpointUrl THEN @endpointUrl ELSE endpoint_url END,
        authorization = CASE WHEN @setAuthorization THEN @authorization ELSE authorization END,
        stream = CASE WHEN @setStream THEN @stream ELSE stream END,
        retention_ms = coalesce(@retentionMs, retention_ms)
      WHERE id = @id AND (NOT @checkStream OR stream IS @ifStream)`),
    deliveryOf: p('SELECT delivery FROM receivers WHERE id = ?').pluck(true),
    getReceiver: p(`SELECT ${RECEIVER_COLUMNS} FROM receivers r WHERE r.id = ?`),
    pollReceiver: p(`SELECT ${RECEIVER_COLUMNS} FROM receivers r WHERE r.delivery = 'poll' AND r.client_id = ? ORDER BY r.created_at, r.id LIMIT 1`),
    listReceivers: p(`SELECT ${RECEIVER_COLUMNS},
        CASE r.delivery WHEN 'poll'
          THEN (SELECT count(*) FROM security_events e WHERE e.seq > r.acked_through)
             - (SELECT count(*) FROM poll_acks a WHERE a.receiver_id = r.id)
          ELSE (SELECT count(*) FROM event_deliveries d WHERE d.receiver_id = r.id AND d.state = 'pending') END AS pending,
        (SELECT count(*) FROM event_deliveries d WHERE d.receiver_id = r.id AND d.state = 'dead') AS dead,
        CASE r.delivery WHEN 'poll'
          THEN (SELECT e.at FROM security_events e WHERE e.seq > r.acked_through
                  AND NOT EXISTS (SELECT 1 FROM poll_acks a WHERE a.receiver_id = r.id AND a.event_seq = e.seq) ORDER BY e.seq LIMIT 1)
          ELSE (SELECT min(e.at) FROM event_deliveries d JOIN security_events e ON e.seq = d.event_seq
                  WHERE d.receiver_id = r.id AND d.state = 'pending') END AS oldestPendingAt,
        r.last_error AS lastError, r.last_delivered_at AS lastDeliveredAt
      FROM receivers r ORDER BY r.id`),
    deleteReceiver: p('DELETE FROM receivers WHERE id = ?'), // its deliveries and poll_acks go by ON DELETE CASCADE

    duePush: p(DUE_PUSH).pluck(true),
    lease: p('UPDATE receivers SET lease_owner = @owner, lease_until = @until WHERE id = @id'),
    release: p('UPDATE receivers SET lease_owner = NULL, lease_until = 0 WHERE id = ? AND lease_owner = ?'),
    pending: p(`SELECT d.attempts, e.id, CAST(e.payload AS BLOB), e.seq FROM event_deliveries d JOIN security_events e ON e.seq = d.event_seq
      WHERE d.receiver_id = @receiverId AND d.state = 'pending' ORDER BY d.event_seq LIMIT @limit`).raw(true),
    pollPending: p(POLL_PENDING).raw(true),
    delivered: p(`DELETE FROM event_deliveries WHERE ${SETTLEABLE}`),
    retry: p(`UPDATE event_deliveries SET attempts = attempts + 1, next_attempt_at = @retryAt, last_error = @error WHERE ${SETTLEABLE}`),
    dead: p(`UPDATE event_deliveries SET state = 'dead', attempts = attempts + 1, last_error = @error WHERE ${SETTLEABLE}`),
    receiverDelivered: p('UPDATE receivers SET last_delivered_at = ? WHERE id = ?'),
    receiverFailed: p('UPDATE receivers SET last_error = ? WHERE id = ?'),
    retryDead: p(`UPDATE event_deliveries SET state = 'pending', attempts = 0, next_attempt_at = ? WHERE receiver_id = ? AND state = 'dead'`),
    // Acknowledgements of a push receiver's deliveries by id (RFC 8936 is for poll receivers; the contract allows either).
    ackPush: p(`DELETE FROM event_deliveries WHERE receiver_id = @receiverId AND state = 'pending' AND event_seq IN (
      SELECT d.event_seq FROM event_deliveries d JOIN security_events e ON e.seq = d.event_seq
      WHERE d.receiver_id = @receiverId AND d.state = 'pending' AND e.id IN (SELECT value FROM json_each(@ids)))`),
    // A poll receiver's acknowledgements: the rows' seqs (looked for in the first ACK_SCAN_ROWS rows after
    // @after), marked in poll_acks, then the cursor moved over every row marked from its place on.
    cursor: p('SELECT acked_through FROM receivers WHERE id = ?').pluck(true),
    idsAfter: p(`SELECT seq, id FROM security_events WHERE seq > ? ORDER BY seq LIMIT ${ACK_SCAN_ROWS}`).raw(true),
    markAcked: p(`INSERT OR IGNORE INTO poll_acks (receiver_id, event_seq)
      SELECT @receiverId, seq FROM security_events WHERE seq BETWEEN @first AND @last AND seq > @after`),
    // The last row before the first one not acknowledged after @after (or the newest row, when every one is).
    ackedThrough: p(`SELECT coalesce(
        (SELECT e.seq - 1 FROM security_events e WHERE e.seq > @after
           AND NOT EXISTS (SELECT 1 FROM poll_acks a WHERE a.receiver_id = @receiverId AND a.event_seq = e.seq) ORDER BY e.seq LIMIT 1),
        (SELECT max(seq) FROM security_events), @after)`).pluck(true),
    moveCursor: p('UPDATE receivers SET acked_through = @through WHERE id = @receiverId'),
    nextSeq: p('SELECT seq FROM security_events WHERE seq > ? ORDER BY seq LIMIT 1').pluck(true),
    // The rows from @first to @last not acknowledged yet (those after the cursor, not marked).
    unacked: p(`SELECT (SELECT count(*) FROM security_events WHERE seq BETWEEN @first AND @last)
      - (SELECT count(*) FROM poll_acks WHERE receiver_id = @receiverId AND event_seq BETWEEN @first AND @last)`).pluck(true),
    pushSeqOf: p(`SELECT d.event_seq FROM event_deliveries d JOIN security_events e ON e.seq = d.event_seq
      WHERE d.receiver_id = @receiverId AND d.state = 'pending' AND e.id = @id LIMIT 1`).pluck(true),
    ackPushRange: p("DELETE FROM event_deliveries WHERE receiver_id = @receiverId AND state = 'pending' AND event_seq BETWEEN @first AND @last"),
    dropAcked: p('DELETE FROM poll_acks WHERE receiver_id = @receiverId AND event_seq <= @through'),
    purge: p(PURGE),

    listKeys: p(`SELECT ${KEY_COLUMNS} FROM signing_keys ORDER BY created_at DESC, kid`),
    currentKid: p('SELECT kid FROM signing_keys WHERE retired_at IS NULL AND alg = ?').pluck(true),
    retireCurrentKey: p('UPDATE signing_keys SET retired_at = ? WHERE retired_at IS NULL AND alg = ?'),
    insertKey: p(`INSERT INTO signing_keys (kid, alg, private_jwk, public_jwk, created_at, retired_at)
      VALUES (@kid, @alg, @privateJwk, @publicJwk, @createdAt, NULL)`),
    deleteRetiredKeys: p('DELETE FROM signing_keys WHERE retired_at < ?'),
  };
}
