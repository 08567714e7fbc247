package faults_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/audit"
	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/demo"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/lease"
	"github.com/leasetop/leasetop/monitor"
)

// account is the one account every fault test's sessions belong to.
const account = "faults"

// rig is one fault test's world: a migrated database with the demo's output
// table (the protected resource of the holders' fenced writes), the test's
// own direct store, and what the holders believed (for audit.Check).
type rig struct {
	t     *testing.T
	url   string      // the database, directly, as the superuser
	store *data.Store // the test's reads and SQL, direct
	keys  []data.Key  // the sessions the holders contend for

	mu  sync.Mutex
	rec *audit.Record
	// when each run started, stopped working (before its release) and
	// ended, as the holder saw it (local clock)
	startedAt, stoppedAt, endedAt map[uuid.UUID]time.Time
	// accepted fenced writes per run after watchWrites (patroni_settle_test.go)
	writesFrom time.Time
	writesAt   map[uuid.UUID][]time.Time
}

// newRig makes a rig on a fresh database of the package's server with
// sessions sessions.
func newRig(t *testing.T, sessions int) *rig {
	t.Helper()
	return newRigOn(t, pgtest.New(t).URL, sessions)
}

// newRigOn makes a rig on the migrated database at dsn.
func newRigOn(t *testing.T, dsn string, sessions int) *rig {
	t.Helper()
	r := &rig{t: t, url: dsn, store: pgtest.OpenStore(t, dsn, data.Options{}), rec: audit.NewRecord([]string{account}, 0),
		startedAt: map[uuid.UUID]time.Time{}, stoppedAt: map[uuid.UUID]time.Time{}, endedAt: map[uuid.UUID]time.Time{}}
	if _, err := demo.Setup(context.Background(), r.store); err != nil {
		t.Fatal(err)
	}
	for i := range sessions {
		r.keys = append(r.keys, data.Key{Account: account, Session: fmt.Sprintf("s%d", i)})
	}
	return r
}

// started records that a holder believes it holds l.
func (r *rig) started(l *lease.Lease) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rec.Started[l.RunID()] = audit.StartedRun{Key: l.Key(), Fence: l.Fence(), Holder: l.Holder()}
	r.startedAt[l.RunID()] = time.Now()
}

// stopped records that a holder stopped working under l (it releases it
// next).
func (r *rig) stopped(l *lease.Lease) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stoppedAt[l.RunID()] = time.Now()
}

// ended records how a holder's run ended: released, or lost.
func (r *rig) ended(l *lease.Lease, lost bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	how := audit.EndReleased
	if lost {
		how = audit.EndLost
	}
	r.rec.Ended[l.RunID()] = how
	r.endedAt[l.RunID()] = time.Now()
}

// killed records that the process labelled holder was killed on purpose:
// its lease ended by process loss.
func (r *rig) killed(holder string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rec.Killed[holder] = true
	r.rec.Kills++
}

// lastEventID returns the newest event id in the database.
func (r *rig) lastEventID() int64 {
	r.t.Helper()
	id, err := r.store.LastEventID(context.Background())
	if err != nil {
		r.t.Fatalf("LastEventID: %v", err)
	}
	return id
}

// serverNow reads the database clock.
func (r *rig) serverNow() time.Time {
	r.t.Helper()
	var now time.Time
	if err := r.store.Pool().QueryRow(context.Background(), `SELECT clock_timestamp()`).Scan(&now); err != nil {
		r.t.Fatalf("clock_timestamp: %v", err)
	}
	return now
}

// exec runs SQL on the test's direct store.
func (r *rig) exec(sql string, args ...any) {
	r.t.Helper()
	if _, err := r.store.Pool().Exec(context.Background(), sql, args...); err != nil {
		r.t.Fatalf("%s: %v", strings.Join(strings.Fields(sql), " "), err)
	}
}

// events returns every event of the rig's account, oldest first.
func (r *rig) events() []data.Event {
	r.t.Helper()
	var out []data.Event
	for ev, err := range r.store.Events(context.Background(), 0) {
		if err != nil {
			r.t.Fatalf("read the event history: %v", err)
		}
		out = append(out, ev)
	}
	return out
}

// leases reads lease.session_lease.
func (r *rig) leases() map[data.Key]data.Lease {
	r.t.Helper()
	rows, err := r.store.Pool().Query(context.Background(),
		`SELECT account_id, session_id, run_id, holder, fence, acquired_at, renewed_at, expires_at FROM lease.session_lease`)
	if err != nil {
		r.t.Fatal(err)
	}
	out := map[data.Key]data.Lease{}
	ls, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (data.Lease, error) {
		var l data.Lease
		err := row.Scan(&l.Account, &l.Session, &l.RunID, &l.Holder, &l.Fence, &l.AcquiredAt, &l.RenewedAt, &l.ExpiresAt)
		return l, err
	})
	if err != nil {
		r.t.Fatal(err)
	}
	for _, l := range ls {
		out[l.Key] = l
	}
	return out
}

// eventIDs returns the ids of every event after after.
func (r *rig) eventIDs(after int64) []int64 {
	r.t.Helper()
	rows, err := r.store.Pool().Query(context.Background(), `SELECT id FROM lease.event WHERE id > $1 ORDER BY id`, after)
	if err != nil {
		r.t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		r.t.Fatal(err)
	}
	return ids
}

// report logs one measured outcome as "FAULT name key=value ...", the line
// docs/RELIABILITY.md quotes.
func report(t *testing.T, name string, kv ...any) {
	t.Helper()
	var b strings.Builder
	b.WriteString("FAULT " + name)
	for i := 0; i+1 < len(kv); i += 2 {
		v := kv[i+1]
		if d, ok := v.(time.Duration); ok {
			v = d.Round(time.Millisecond)
		}
		fmt.Fprintf(&b, " %v=%v", kv[i], v)
	}
	t.Log(b.String())
}

// mirrorCfg is the monitor's feed configuration in the fault tests: the
// defaults, with renewals read every 100 ms so that a quiesced database is
// mirrored quickly.
func mirrorCfg() monitor.FeedConfig {
	return monitor.FeedConfig{DeltaInterval: 100 * time.Millisecond}
}
