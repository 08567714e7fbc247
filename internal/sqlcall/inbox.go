package sqlcall

import "github.com/jackc/pgx/v5/pgtype"

// The inbox's calls (sql/inbox.sql), with their parameters in the
// functions' order.
const (
	// SendMessage returns the message's status (id, kind, state, run_id,
	// fence, sent_at, expires_at, delivered_at, acked_at, created).
	// Parameters: account, session, kind, body, sender, key, ttl.
	SendMessage = `SELECT id, kind, state, run_id, fence, sent_at, expires_at, delivered_at, acked_at, created
	FROM lease.send_message($1, $2, $3, $4, $5, $6, $7)`
	// ReceiveMessages returns the messages delivered to the run. Its
	// transaction commits without waiting for its WAL flush
	// (synchronous_commit off, set by the filter on the rows it returns,
	// before the commit): a delivery lost in a crash is made again at the
	// next receive that reads it (the library's Ack of a message it handed
	// on receives it again: lease.Message.Ack), while a receive waiting for its flush, with its NOTIFY,
	// holds the cluster's notify lock through it. Parameters: account,
	// session, run id, after id, max count.
	ReceiveMessages = `SELECT id, kind, body, sender, actor, sent_at, expires_at, carried_from
	FROM lease.receive_messages($1, $2, $3, $4, $5)
	WHERE pg_catalog.set_config('synchronous_commit', 'off', true) IS NOT NULL`
	// AckMessage returns the outcome. Parameters: account, session, run
	// id, message id.
	AckMessage = `SELECT lease.ack_message($1, $2, $3, $4)`
	// AckMessages returns one row (id, outcome) per distinct id.
	// Parameters: account, session, run id, the message ids (bigint[]).
	AckMessages = `SELECT id, outcome FROM lease.ack_messages($1, $2, $3, $4)`
	// MessageState returns the message's status, all NULL when there is
	// none. Parameters: account, session, key.
	MessageState = `SELECT id, kind, state, run_id, fence, sent_at, expires_at, delivered_at, acked_at, created
	FROM lease.message_state($1, $2, $3)`
	// MaintainMessages returns how many messages it expired and deleted.
	// Parameters: keep (NULL: delete nothing), max count.
	MaintainMessages = `SELECT expired, deleted FROM lease.maintain_messages($1, $2)`
)

// The library's send and acknowledgement, which notify after their commit
// as an acquire does (QuietCall, AcquireQuiet): a send's message_sent, its
// notification keyed by the nil run (a sender holds none), and an acknowledgement's
// message_acked, keyed by the run. Each waits for its WAL flush (a message
// the sender was told is sent, an acknowledgement a sender may be told of,
// must survive a crash), without holding the cluster's notify lock through
// it.
var (
	SendQuiet = QuietCall{
		Setup: `SELECT ` + OptOut,
		Call: Statement{SendMessage, []uint32{pgtype.TextOID, pgtype.TextOID, pgtype.TextOID, pgtype.TextOID,
			pgtype.TextOID, pgtype.TextOID, pgtype.IntervalOID}},
		Notify: Statement{NotifyPending, keyRun},
	}
	AckQuiet = QuietCall{
		Setup:  `SELECT ` + OptOut,
		Call:   Statement{AckMessage, []uint32{pgtype.TextOID, pgtype.TextOID, pgtype.UUIDOID, pgtype.Int8OID}},
		Notify: Statement{NotifyPending, keyRun},
	}
	// AckManyQuiet is AckQuiet for many messages (lease.ack_messages): one
	// commit, then one message_acked notification per message it
	// acknowledged, all from one transaction that writes nothing
	// (NotifyPendingAll).
	AckManyQuiet = QuietCall{
		Setup:  `SELECT ` + OptOut,
		Call:   Statement{AckMessages, []uint32{pgtype.TextOID, pgtype.TextOID, pgtype.UUIDOID, pgtype.Int8ArrayOID}},
		Notify: Statement{NotifyPendingAll, keyRun},
	}
)

// NotifyPendingAll is NotifyPending for a call that kept many payloads
// (lease.ack_messages: lease.pending_events, a JSON array of them): it
// sends each, in order, if they are for this key and run, and forgets them.
// Its WHERE is a one-time filter, run before the array is read (set_config
// of the first row does not hide the rest: the array is read once). One row
// per notification sent. Parameters: account, session, public run id.
const NotifyPendingAll = `SELECT pg_catalog.pg_notify('lease_events', e.p),
       pg_catalog.set_config('lease.pending_for', '', false),
       pg_catalog.set_config('lease.pending_events', '[]', false)
  FROM pg_catalog.json_array_elements_text(
         COALESCE(pg_catalog.current_setting('lease.pending_events', true), '[]')::pg_catalog.json) AS e(p)
 WHERE pg_catalog.current_setting('lease.pending_for', true) OPERATOR(pg_catalog.=) lease.pending_key($1, $2, $3)`
