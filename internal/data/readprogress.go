package data

import "context"

// readProgressKey is the context key of WithReadProgress's function.
type readProgressKey struct{}

// WithReadProgress returns a context whose reads of many rows (the leases
// renewed since a time, leases by key, events by id) call progress as rows
// arrive: every few hundred rows. A caller that cuts a read off when it
// receives nothing for a while, rather than after a fixed total time,
// restarts its timer there (the monitor's feed; SyncQuery.Progress is the
// same for ReadSync). progress runs on the reading goroutine and must not
// block.
func WithReadProgress(ctx context.Context, progress func()) context.Context {
	return context.WithValue(ctx, readProgressKey{}, progress)
}

// readProgress returns ctx's WithReadProgress function, or nil.
func readProgress(ctx context.Context) func() {
	fn, _ := ctx.Value(readProgressKey{}).(func())
	return fn
}
