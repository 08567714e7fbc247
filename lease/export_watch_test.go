package lease

// HolderChecks returns how many holder-watch checks of c's leases the
// database has answered (watch.go).
func HolderChecks(c *Client) int64 { return c.notes.checks.Load() }

// NotifiedClaims returns how many of c's asks claimed their lease on the
// handed_over notification naming them (ask_claim.go).
func NotifiedClaims(c *Client) int64 { return c.notes.claims.Load() }

// ListenerStarts returns how many times c's notifier started (or
// restarted) its listener.
func ListenerStarts(c *Client) int64 { return c.notes.starts.Load() }
