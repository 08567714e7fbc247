package sqlcall

// The inbox's calls (sql/inbox.sql), with their parameters in the
// functions' order.
const (
	// SendMessage returns the message's status (id, kind, state, run_id,
	// fence, sent_at, expires_at, delivered_at, acked_at, created).
	// Parameters: account, session, kind, body, sender, key, ttl.
	SendMessage = `SELECT id, kind, state, run_id, fence, sent_at, expires_at, delivered_at, acked_at, created
	FROM lease.send_message($1, $2, $3, $4, $5, $6, $7)`
	// ReceiveMessages returns the messages delivered to the run.
	// Parameters: account, session, run id, after id, max count.
	ReceiveMessages = `SELECT id, kind, body, sender, actor, sent_at, expires_at, carried_from
	FROM lease.receive_messages($1, $2, $3, $4, $5)`
	// AckMessage returns the outcome. Parameters: account, session, run
	// id, message id.
	AckMessage = `SELECT lease.ack_message($1, $2, $3, $4)`
	// MessageState returns the message's status, all NULL when there is
	// none. Parameters: account, session, key.
	MessageState = `SELECT id, kind, state, run_id, fence, sent_at, expires_at, delivered_at, acked_at, created
	FROM lease.message_state($1, $2, $3)`
	// MaintainMessages returns how many messages it expired and deleted.
	// Parameters: keep (NULL: delete nothing), max count.
	MaintainMessages = `SELECT expired, deleted FROM lease.maintain_messages($1, $2)`
)
