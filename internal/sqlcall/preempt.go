package sqlcall

import "github.com/jackc/pgx/v5/pgtype"

// The calls of sql/preempt.sql, with their parameters in the functions'
// order.
const (
	// AcquireWith is Acquire with the holder's options. Parameters:
	// account, session, run id, ttl, holder, preemptible, attachment.
	AcquireWith = `SELECT run_id, fence, expires_at FROM lease.acquire_with($1, $2, $3, $4, $5, $6, $7)`
	// Preempt returns the grant's row, or no row when the key changed hands
	// while it waited. Parameters: account, session, run id, ttl, holder,
	// reason, preemptible, attachment.
	Preempt = `SELECT run_id, fence, expires_at FROM lease.preempt($1, $2, $3, $4, $5, $6, $7, $8)`
	// SetAttachment reports whether the run still held the lease.
	// Parameters: account, session, run id, attachment.
	SetAttachment = `SELECT lease.set_attachment($1, $2, $3, $4)`
	// PreemptStopped is the preempted run's word that its work stopped; it
	// reports whether that was news. Parameters: account, session, run id.
	PreemptStopped = `SELECT lease.preempt_stopped($1, $2, $3)`
	// PreemptPending reports whether the run the preemptor preempted has not
	// said so yet. Parameters: account, session, the preemptor's run id.
	PreemptPending = `SELECT lease.preempt_pending($1, $2, $3)`
)

var (
	acquireWithP = append(append([]uint32(nil), acquireP...), pgtype.BoolOID, pgtype.TextOID)
	preemptP     = append(append([]uint32(nil), acquireP...), pgtype.TextOID, pgtype.BoolOID, pgtype.TextOID)
)

// AcquireWithQuiet and PreemptQuiet are quiet calls, as AcquireQuiet is:
// the call in a transaction of its own that opts out of the trigger's
// NOTIFY, and the notification of the event it wrote sent after its commit
// (NotifyPending).
// A preempt writes acquired or taken_over when the key was free or expired,
// preempted when it replaced an unexpired holder.
var (
	AcquireWithQuiet = QuietCall{
		Setup:  `SELECT ` + OptOut,
		Call:   Statement{AcquireWith, acquireWithP},
		Notify: Statement{NotifyPending, keyRun},
	}
	PreemptQuiet = QuietCall{
		Setup:  `SELECT ` + OptOut,
		Call:   Statement{Preempt, preemptP},
		Notify: Statement{NotifyPending, keyRun},
	}
)
