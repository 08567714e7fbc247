package supervise_test

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/internal/testkit/proctest"
	"github.com/leasetop/leasetop/lease"
)

var testKey = lease.Key{Account: "acct", Session: "sess"}

// env is a test's database, with the recorder's table.
type env struct {
	db    pgtest.DB
	store *data.Store
	pool  *pgxpool.Pool
}

func newEnv(t *testing.T) env {
	t.Helper()
	db := pgtest.New(t)
	e := env{db: db, store: db.Store(t), pool: db.Pool(t)}
	if _, err := e.pool.Exec(context.Background(), proctest.RecorderSchema); err != nil {
		t.Fatalf("create recorder table: %v", err)
	}
	return e
}

// leasetop starts `leasetop args...` with DATABASE_URL set to e's database;
// its recorder children write there directly. The process is killed when
// the test ends if it is still running.
func (e env) leasetop(t *testing.T, args ...string) *proctest.Process {
	t.Helper()
	return e.leasetopEnv(t, nil, args...)
}

func (e env) leasetopEnv(t *testing.T, extraEnv []string, args ...string) *proctest.Process {
	t.Helper()
	cmd := exec.Command(leasetopBin, args...)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+e.db.URL, proctest.EnvRecorderDSN+"="+e.db.URL)
	cmd.Env = append(cmd.Env, extraEnv...)
	return proctest.Start(t, cmd)
}

// recorderArgs is the child command for leasetop run: this test binary as
// the recorder.
func recorderArgs() []string { return []string{os.Args[0]} }

// recorderEnv makes the recorder child write every `every`.
func recorderEnv(every time.Duration) []string {
	return []string{proctest.EnvRecorder + "=1", proctest.EnvRecorderEvery + "=" + every.String()}
}

// children reads the recorder's records grouped by child.
func (e env) children(t *testing.T) []*proctest.Child {
	t.Helper()
	recs, err := proctest.Records(context.Background(), e.pool)
	if err != nil {
		t.Fatalf("read records: %v", err)
	}
	return proctest.Children(recs)
}

// waitChildren waits until n children have started and returns them.
func (e env) waitChildren(t *testing.T, n int, timeout time.Duration) []*proctest.Child {
	t.Helper()
	var cs []*proctest.Child
	pgtest.Eventually(t, timeout, strconv.Itoa(n)+" recorder children to start", func() bool {
		cs = e.children(t)
		return len(cs) >= n
	})
	return cs
}

// events returns key's events, oldest first.
func (e env) events(t *testing.T) []data.Event {
	t.Helper()
	evs, err := e.store.EventsFor(context.Background(), testKey, 1000)
	if err != nil {
		t.Fatalf("EventsFor: %v", err)
	}
	for i, j := 0, len(evs)-1; i < j; i, j = i+1, j-1 {
		evs[i], evs[j] = evs[j], evs[i]
	}
	return evs
}

func (e env) holder(t *testing.T) data.Lease {
	t.Helper()
	snap, err := e.store.Snapshot(context.Background())
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	for _, l := range snap.Leases {
		if l.Key == testKey {
			return l
		}
	}
	return data.Lease{}
}

// serverNow reads the database clock.
func (e env) serverNow(t *testing.T) time.Time {
	t.Helper()
	var now time.Time
	if err := e.pool.QueryRow(context.Background(), `SELECT clock_timestamp()`).Scan(&now); err != nil {
		t.Fatalf("clock_timestamp: %v", err)
	}
	return now
}

// runArgs is `run --account acct --session sess extra... -- recorder`.
func runArgs(extra ...string) []string {
	args := append([]string{"run", "--account", testKey.Account, "--session", testKey.Session}, extra...)
	return append(append(args, "--"), recorderArgs()...)
}

// waitGone waits until pid has exited.
func waitGone(t *testing.T, pid int, timeout time.Duration, what string) {
	t.Helper()
	pgtest.Eventually(t, timeout, what+" (pid "+strconv.Itoa(pid)+") to exit", func() bool { return proctest.ProcessGone(pid) })
}

func findEvent(evs []data.Event, match func(data.Event) bool) (data.Event, bool) {
	for _, e := range evs {
		if match(e) {
			return e, true
		}
	}
	return data.Event{}, false
}

// dumpOnFailure logs the database's sessions and the key's events when t
// fails, to tell a slow machine from a wrong ordering.
func (e env) dumpOnFailure(t *testing.T) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		rows, err := e.pool.Query(context.Background(), `SELECT coalesce(application_name, ''), coalesce(state, ''),
			coalesce(wait_event, ''), coalesce(query, '') FROM pg_stat_activity WHERE datname = current_database()`)
		if err == nil {
			for rows.Next() {
				var app, state, wait, query string
				if rows.Scan(&app, &state, &wait, &query) == nil {
					t.Logf("session %q %s %s: %s", app, state, wait, query)
				}
			}
			rows.Close()
		}
		for _, ev := range e.events(t) {
			t.Logf("event %d %s at %s run %v prev %v fence %d expires %s reason %q", ev.ID, ev.Kind,
				ev.At.Format("15:04:05.000000"), ev.RunID, ev.PrevRunID, ev.Fence, ev.ExpiresAt.Format("15:04:05.000000"), ev.Reason)
		}
	})
}
