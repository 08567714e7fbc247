package lease

// HolderChecks returns how many holder-watch checks of c's leases the
// database has answered (watch.go).
func HolderChecks(c *Client) int64 { return c.notes.checks.Load() }
