package device

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
)

// Timing of a device's status in the database.
const (
	// StatusHeartbeat: a device writes its status at least this often, so
	// a silent one (frozen, dead) shows as silent.
	StatusHeartbeat = time.Second
	// statusCoalesce: reports closer together than this share a write.
	statusCoalesce = 50 * time.Millisecond
	// statusTimeout bounds one write.
	statusTimeout = 2 * time.Second
	// keepAttempts is how many attempts a device keeps in the table.
	keepAttempts = 200
)

// statusWriter keeps a device process's row in leasetop_demo.device and its
// attempts in leasetop_demo.attempt: what the monitor's devices pane shows,
// read through the database like any other process's state, not from the
// demo's pipes. Its goroutine is started by start and ended by stop.
type statusWriter struct {
	store   *data.Store
	account string
	name    string
	pid     int

	mu     sync.Mutex
	tr     *tracker
	writes int

	wake chan struct{}
	done chan struct{}
	wg   sync.WaitGroup
}

func newStatusWriter(store *data.Store, cfg Config, pid int, holder string) *statusWriter {
	return &statusWriter{
		store: store, account: cfg.Account, name: cfg.Name, pid: pid,
		tr:   newTracker(holder, cfg.Sessions, time.Now()),
		wake: make(chan struct{}, 1),
		done: make(chan struct{}),
	}
}

// observe folds a report in and asks for a write.
func (w *statusWriter) observe(r Report) {
	w.mu.Lock()
	w.tr.apply(r, time.Now())
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// start writes the status at once, then after every report (coalesced)
// and at least every StatusHeartbeat, until stop. ctx should not end when
// the device is told to stop: the runs it ends then are reported too.
func (w *statusWriter) start(ctx context.Context) {
	w.wg.Go(func() {
		beat := time.NewTicker(StatusHeartbeat)
		defer beat.Stop()
		for {
			w.write(ctx)
			select {
			case <-w.done:
				return
			case <-beat.C:
			case <-w.wake:
				select { // let a burst of reports gather
				case <-time.After(statusCoalesce):
				case <-w.done:
					return
				}
			}
		}
	})
}

// stop ends the goroutine and writes the final status: stopped, with
// every run the device ended.
func (w *statusWriter) stop(ctx context.Context) {
	close(w.done)
	w.wg.Wait()
	w.mu.Lock()
	w.tr.stopped = true
	w.mu.Unlock()
	w.write(ctx)
}

const (
	upsertDevice = `
		INSERT INTO leasetop_demo.device (account_id, device, pid, status, reported_at)
		VALUES ($1, $2, $3, $4, clock_timestamp())
		ON CONFLICT (account_id, device, pid) DO UPDATE SET status = EXCLUDED.status, reported_at = EXCLUDED.reported_at`
	insertAttempt = `
		INSERT INTO leasetop_demo.attempt (account_id, device, pid, at, session_id, action, run_id, fence, answer, ok)
		VALUES ($1, $2, $3, clock_timestamp() - make_interval(secs => $4), NULLIF($5, ''), $6, $7, NULLIF($8, 0), $9, $10)`
	pruneAttempts = `
		DELETE FROM leasetop_demo.attempt
		 WHERE account_id = $1 AND device = $2
		   AND id <= (SELECT id FROM leasetop_demo.attempt WHERE account_id = $1 AND device = $2
		               ORDER BY id DESC OFFSET $3 LIMIT 1)`
)

// write sends the status and the attempts not logged yet in one
// transaction. A failed write is not retried: the next one says everything
// again except the attempts, which the device does not keep (the pane is a
// view, the database's lease tables are the record).
func (w *statusWriter) write(ctx context.Context) {
	now := time.Now()
	w.mu.Lock()
	st, attempts := w.tr.status(now)
	w.writes++
	prune := w.writes%50 == 0
	w.mu.Unlock()
	doc, err := json.Marshal(st)
	if err != nil {
		return
	}
	b := &pgx.Batch{}
	b.Queue(upsertDevice, w.account, w.name, w.pid, doc)
	for _, a := range attempts {
		var run any
		if a.run != uuid.Nil {
			run = a.run
		}
		b.Queue(insertAttempt, w.account, w.name, w.pid, now.Sub(a.at).Seconds(), a.session, a.action, run, a.fence, a.answer, a.ok)
	}
	if prune {
		b.Queue(pruneAttempts, w.account, w.name, keepAttempts)
	}
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	_ = pgx.BeginFunc(ctx, w.store.Pinned(), func(tx pgx.Tx) error { return tx.SendBatch(ctx, b).Close() })
}
