package data

// Poll mode's reads, for the EXPLAIN test.
var (
	PollSQL     = pollQuery(false)
	PollGapsSQL = pollQuery(true)
)

// SetAfterCommit makes s call f once an acquire's or a release's
// transaction has committed, before its notification is sent (see
// sqlcall.Options.AfterCommit): the notifier-dies test stops its child there.
func SetAfterCommit(s *Store, f func()) { s.afterCommit = f }
