package sqlcall

// The queue's calls (sql/queue.sql), with their parameters in the functions'
// order.
const (
	// Enqueue returns the caller's place (ahead, expires_at,
	// ahead_expires_at). Parameters: account, session, run id, ttl, holder.
	Enqueue = `SELECT (p).ahead, (p).expires_at, (p).ahead_expires_at FROM lease.enqueue($1, $2, $3, $4, $5) p`
	// RenewTicket returns the caller's place, all NULL when it has no live
	// ticket. Parameters: account, session, run id, ttl.
	RenewTicket = `SELECT (p).ahead, (p).expires_at, (p).ahead_expires_at FROM lease.renew_ticket($1, $2, $3, $4) p`
	// CancelTicket reports whether the run had a ticket. Parameters:
	// account, session, run id.
	CancelTicket = `SELECT lease.cancel_ticket($1, $2, $3)`
)

// ClearQueue is the operator's call: it returns how many live tickets it
// ended. Parameters: account, session, public run id (NULL: every ticket),
// reason.
const ClearQueue = `SELECT lease.clear_queue($1, $2, $3, $4)`
