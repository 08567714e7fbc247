package data

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// MigrateProgress is what a migration is doing: the SQL file it applies,
// which attempt it is, and what its server process does (Activity).
type MigrateProgress struct {
	File string
	// Attempt counts the migration's attempts from 1: each after the first
	// follows one that gave up waiting for a lock another session held
	// (MigrateOptions.Wait).
	Attempt int
	Activity
}

// migrateWatch reports a migration's progress to MigrateOptions.Progress:
// the files and attempts MigrateWith tells it, and the activity of the
// migrating connection's server process, read on a connection of its own.
type migrateWatch struct {
	report  func(MigrateProgress)
	file    atomic.Pointer[string]
	attempt atomic.Int64
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// watchMigration starts watching the migration on conn.
func watchMigration(ctx context.Context, conn *pgx.Conn, report func(MigrateProgress)) *migrateWatch {
	w := &migrateWatch{report: report}
	wctx, cancel := context.WithCancel(ctx)
	w.cancel = cancel
	w.wg.Go(func() {
		watchActivity(wctx, conn.Config(), conn.PgConn().PID(), func(a Activity) {
			if f := w.file.Load(); f != nil {
				w.report(MigrateProgress{File: *f, Attempt: int(w.attempt.Load()), Activity: a})
			}
		})
	})
	return w
}

// startAttempt says that attempt n begins.
func (w *migrateWatch) startAttempt(n int) { w.attempt.Store(int64(n)) }

// startFile says that the migration applies file name now.
func (w *migrateWatch) startFile(name string) {
	w.file.Store(&name)
	w.report(MigrateProgress{File: name, Attempt: int(w.attempt.Load())})
}

// stop ends the watcher and waits for it.
func (w *migrateWatch) stop() { w.cancel(); w.wg.Wait() }
