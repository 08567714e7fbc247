// Package sqlcall holds the statements that call the lease schema's
// functions (sql/functions.sql, sql/triggers.sql). data runs them and bench
// measures them; both take them from here, so what bench measures is what
// the library sends, to the byte (pgx caches a prepared statement per text).
package sqlcall

// The calls, with their parameters in the functions' order.
const (
	// Acquire returns the grant's row, or no row when the lease is held.
	// Parameters: account, session, run id, ttl, holder.
	Acquire = `SELECT run_id, fence, expires_at FROM lease.acquire($1, $2, $3, $4, $5)`
	// Renew returns the new expiry, NULL when rejected. Parameters: account,
	// session, run id, ttl.
	Renew = `SELECT lease.renew($1, $2, $3, $4)`
	// RenewMany returns (i, expires_at) for each renewal decided: the new
	// expiry, NULL when rejected; an index left out was locked by another
	// transaction. Parameters: accounts, sessions, run ids (arrays), ttl.
	RenewMany = `SELECT i, expires_at FROM lease.renew_many($1, $2, $3, $4)`
	// Release reports whether it deleted the row. Parameters: account,
	// session, run id.
	Release = `SELECT lease.release($1, $2, $3)`
	// ForceRelease reports whether it deleted the row. Parameters: account,
	// session, run id (NULL: whoever holds it), reason.
	ForceRelease = `SELECT lease.force_release($1, $2, $3, $4)`
	// CheckFence reports whether the run still holds the lease with this
	// fence. Parameters: account, session, run id, fence.
	CheckFence = `SELECT lease.check_fence($1, $2, $3, $4)`
	// SetNotifyRenewals turns renewal notifications on or off. Parameter:
	// enabled.
	SetNotifyRenewals = `SELECT lease.set_notify_renewals($1)`
	// SetLimit sets an account's or a pool's limit and returns how many
	// live runs hold its slots. Parameters: account, pool, slots.
	SetLimit = `SELECT lease.set_limit($1, $2, $3)`
	// RemoveLimit reports whether there was such a limit. Parameters:
	// account, pool.
	RemoveLimit = `SELECT lease.remove_limit($1, $2)`
	// NotifyRenewals reports whether renewals notify.
	NotifyRenewals = `SELECT lease.notify_renewals()`
)
