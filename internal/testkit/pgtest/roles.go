package pgtest

import "testing"

// ReaderURL creates a login role that is only a lease_reader (SELECT on the
// lease schema), dropped when the test ends, and returns the URL that
// connects to db as it (Login with the lease_reader group).
func (db DB) ReaderURL(t testing.TB) string {
	t.Helper()
	dsn, _ := Login(t, db, "lease_reader")
	return dsn
}
