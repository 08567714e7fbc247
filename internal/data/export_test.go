package data

// Poll mode's reads, for the EXPLAIN test.
var (
	PollSQL     = pollQuery(false)
	PollGapsSQL = pollQuery(true)
)

// The reads by id and by session, for the partition plans' test.
const (
	EventsSinceSQL = eventsSinceSQL
	EventsForSQL   = eventsForSQL
)

// SetAfterCommit makes s call f once an acquire's or a release's
// transaction has committed, before its notification is sent (see
// sqlcall.Options.AfterCommit): the notifier-dies test stops its child there.
func SetAfterCommit(s *Store, f func()) { s.afterCommit = f }

// Pooled reports whether s found a pooler between it and PostgreSQL when it
// opened, and so uses the query mode that keeps no prepared statement past
// its transaction.
func Pooled(s *Store) bool {
	return s.pool.Config().ConnConfig.DefaultQueryExecMode == pooledMode
}

// CreatedByFiles is what migrate's check for foreign objects reads the
// files to create: functions as name and argument types (dropped: the
// signatures the files drop), relations, types and triggers ("name table").
func CreatedByFiles() (funcs, funcArgs, dropped, relations, types, triggers []string) {
	c := createdByFiles()
	return c.Funcs, c.FuncArgs, c.Dropped, c.Relations, c.Types, c.Triggers
}
