package data_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/pgserver"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// waitPolling waits until l is in poll mode and polling, and returns its
// state.
func waitPolling(t *testing.T, l *testListener) data.ListenerState {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		st := l.State()
		if st.Status == data.ListenerPolling {
			return st
		}
		select {
		case <-l.StateChanged():
		case <-deadline:
			t.Fatalf("listener state = %+v after 20 s, want POLL", st)
		}
	}
}

// waitRows collects rows from l until want holds or 15 s pass.
func waitRows(t *testing.T, l *testListener, got *[]data.Event, want func([]data.Event) bool) {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for !want(*got) {
		select {
		case b := <-l.Deliveries():
			if len(b.Events) > 0 && b.Origin != data.FromPoll {
				t.Fatalf("a polling listener delivered %v from %v", ids(b.Events), b.Origin)
			}
			*got = append(*got, b.Events...)
		case <-deadline:
			t.Fatalf("after 15 s the listener delivered %d rows %v; state %+v", len(*got), ids(*got), l.State())
		}
	}
}

func ids(evs []data.Event) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

func hasID(id int64) func([]data.Event) bool {
	return func(evs []data.Event) bool {
		return slices.ContainsFunc(evs, func(e data.Event) bool { return e.ID == id })
	}
}

// TestListenerThroughPooler: through PgBouncer the listener's LISTEN
// "succeeds" and hears nothing. Without a listen DSN it finds the pooler on
// its first connection, before any LISTEN (the backend pid is not the one
// announced), says so once, and polls, delivering transitions as rows; a
// later listener of the same store polls from the start. A listen DSN
// through the pooler is taken at its word: its LISTEN hears nothing (its
// own ping never comes back), and it polls. With a listen DSN to the server
// it is live.
func TestListenerThroughPooler(t *testing.T) {
	db := pgtest.New(t)
	via := db.Via(t, pgtest.Bouncer(t, pgserver.BouncerOptions{PoolSize: 2}))
	k := data.Key{Account: "pooled", Session: "s"}

	t.Run("no listen DSN", func(t *testing.T) {
		var calls atomic.Int32
		s := pgtest.OpenStore(t, via, data.Options{OnPoll: func(data.ListenerState) { calls.Add(1) }})
		l := startListener(t, s, data.ListenerConfig{})
		waitResync(t, l)
		st := waitPolling(t, l)
		if st.Reason.Cause != data.PollPooler || st.Poll != data.DefaultFallbackPoll ||
			!strings.Contains(st.Reason.String(), "set a listen DSN") {
			t.Fatalf("state = %+v (%s), want polling every %s because of the pooler, naming the listen DSN",
				st, st.Reason, data.DefaultFallbackPoll)
		}
		run := uuid.New()
		g := mustAcquire(t, s, k, run, time.Minute)
		id := lastID(t, s)
		var got []data.Event
		waitRows(t, l, &got, hasID(id))
		if ev := got[len(got)-1]; ev.Kind != data.KindAcquired || ev.Fence != g.Fence {
			t.Fatalf("row = %+v, want acquired with fence %d", ev, g.Fence)
		}
		if n := calls.Load(); n != 1 {
			t.Fatalf("OnPoll called %d times by one listener, want once", n)
		}
		if _, err := s.Release(context.Background(), k, run); err != nil {
			t.Fatal(err)
		}

		again := startListener(t, s, data.ListenerConfig{})
		waitResync(t, again)
		if st := again.State(); st.Status != data.ListenerPolling || st.Reason.Cause != data.PollPooler {
			t.Fatalf("the store's next listener: state %+v right after its first read, want polling already", st)
		}
	})

	t.Run("listen DSN through the pooler", func(t *testing.T) {
		s := pgtest.OpenStore(t, via, data.Options{ListenDSN: via})
		l := startListener(t, s, data.ListenerConfig{PingTimeout: time.Second})
		waitResync(t, l)
		if st := waitPolling(t, l); st.Reason.Cause != data.PollNoDelivery || !strings.Contains(st.Reason.String(), "set a listen DSN") {
			t.Fatalf("state = %+v (%s), want polling because no ping came back, naming the listen DSN", st, st.Reason)
		}
	})

	t.Run("listen DSN", func(t *testing.T) {
		s := pgtest.OpenStore(t, via, data.Options{ListenDSN: db.URL})
		l := startListener(t, s, data.ListenerConfig{})
		waitResync(t, l)
		if st := l.State(); st.Status != data.ListenerLive {
			t.Fatalf("state = %+v, want LIVE on the direct listen connection", st)
		}
		run := uuid.New()
		mustAcquire(t, s, k, run, time.Minute)
		if ev := waitEvent(t, l); ev.Kind != data.KindAcquired || ev.RunID != data.PublicRunID(run) {
			t.Fatalf("notification = %+v, want acquired by %v", ev, data.PublicRunID(run))
		}
	})
}

// lastID returns the newest event id.
func lastID(t *testing.T, s *data.Store) int64 {
	t.Helper()
	id, err := s.LastEventID(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestListenerOnStandby: on a hot standby the listener polls from its first
// connection, and delivers what the primary commits once it is replayed. A
// listen DSN that points at a standby gets LISTEN's error, and polls too.
func TestListenerOnStandby(t *testing.T) {
	db := pgtest.New(t)
	standby := pgtest.Standby(t)
	primary := db.Store(t)
	k := data.Key{Account: "standby", Session: "s"}

	t.Run("store on the standby", func(t *testing.T) {
		s := pgtest.OpenStore(t, db.On(t, standby), data.Options{})
		l := startListener(t, s, data.ListenerConfig{})
		waitResync(t, l)
		if st := waitPolling(t, l); st.Reason.Cause != data.PollStandby {
			t.Fatalf("state = %+v, want polling because the server is a standby", st)
		}
		run := uuid.New()
		mustAcquire(t, primary, k, run, time.Minute)
		id := lastID(t, primary)
		var got []data.Event
		waitRows(t, l, &got, hasID(id))
		if _, err := primary.Release(context.Background(), k, run); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("writes", func(t *testing.T) {
		s := pgtest.OpenStore(t, db.On(t, standby), data.Options{})
		_, err := s.Acquire(context.Background(), data.Key{Account: "standby", Session: "never held"}, uuid.New(), time.Minute, "h")
		if !errors.Is(err, data.ErrReadOnly) || !strings.Contains(err.Error(), "writes need the primary") {
			t.Fatalf("Acquire on a standby err = %v, want ErrReadOnly saying writes need the primary", err)
		}
	})

	t.Run("listen DSN on the standby", func(t *testing.T) {
		s := pgtest.OpenStore(t, db.URL, data.Options{ListenDSN: db.On(t, standby)})
		l := startListener(t, s, data.ListenerConfig{})
		waitResync(t, l)
		st := waitPolling(t, l)
		if st.Reason.Cause != data.PollListenFailed || !strings.Contains(st.Reason.String(), "cannot execute LISTEN during recovery") {
			t.Fatalf("state = %+v (%s), want polling because LISTEN failed during recovery", st, st.Reason)
		}
	})
}

// TestPollDeliversEachEventOnce: poll mode reads lease.event by id, and ids
// are not commit order. An event whose transaction drew its id first and
// commits last is delivered when it commits; a rolled-back one never; every
// committed one exactly once, compared with lease.event.
func TestPollDeliversEachEventOnce(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	mustAcquire(t, s, data.Key{Account: "before", Session: "s"}, uuid.New(), time.Minute)
	l := startListener(t, s, data.ListenerConfig{Poll: 20 * time.Millisecond, PollLimit: 7})
	waitResync(t, l)
	if st := waitPolling(t, l); st.Reason.Cause != data.PollRequested || st.Poll != 20*time.Millisecond {
		t.Fatalf("state = %+v, want polling every 20ms on request", st)
	}
	start := lastID(t, s)

	late, rolledBack := db.Conn(t), db.Conn(t)
	lateID, goneID := uncommittedEvent(t, late, "late"), uncommittedEvent(t, rolledBack, "gone")
	for i := range 20 { // more than one page (PollLimit 7) past both
		mustAcquire(t, s, data.Key{Account: "after", Session: fmt.Sprint(i)}, uuid.New(), time.Minute)
	}
	var got []data.Event
	waitRows(t, l, &got, hasID(lastID(t, s)))
	if hasID(lateID)(got) {
		t.Fatalf("delivered id %d before its transaction committed", lateID)
	}
	if _, err := rolledBack.Exec(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	if _, err := late.Exec(ctx, `COMMIT`); err != nil {
		t.Fatal(err)
	}
	waitRows(t, l, &got, hasID(lateID))
	mustAcquire(t, s, data.Key{Account: "last", Session: "s"}, uuid.New(), time.Minute)
	waitRows(t, l, &got, hasID(lastID(t, s)))

	rows, err := s.EventsSince(ctx, start, 1000)
	if err != nil {
		t.Fatal(err)
	}
	want := ids(rows)
	gotIDs := ids(got)
	slices.Sort(gotIDs)
	if !slices.Equal(gotIDs, want) {
		t.Fatalf("delivered ids %v, want lease.event's ids after %d: %v (each once; rolled back %d)", gotIDs, start, want, goneID)
	}
	if slices.Contains(gotIDs, goneID) || !slices.Contains(gotIDs, lateID) {
		t.Fatalf("delivered %v: want the late commit %d, not the rollback %d", gotIDs, lateID, goneID)
	}
}

// uncommittedEvent begins a transaction on conn that acquires account's
// session "s", and returns the id its event row drew; the transaction
// stays open.
func uncommittedEvent(t *testing.T, conn *pgx.Conn, account string) int64 {
	t.Helper()
	ctx := context.Background()
	var id int64
	if _, err := conn.Exec(ctx, `BEGIN`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `SELECT lease.acquire($1, 's', gen_random_uuid(), '1 minute', $1)`, account); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `SELECT max(id) FROM lease.event`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestIdlePollIsAnIndexProbe: at 100,000 events an idle poll (nothing new,
// a few gaps) is a probe of the partitions' unique id indexes (*_id_key), by
// the planner's own account (EXPLAIN ANALYZE): no sequential scan that reads
// a page (an empty partition's costs none), an id index used, and a handful
// of pages touched, where a scan of the index would touch hundreds.
func TestIdlePollIsAnIndexProbe(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	if _, err := conn.Exec(ctx, `
		INSERT INTO lease.event (at, kind, account_id, session_id, run_id, fence, expires_at, actor)
		SELECT clock_timestamp(), 'acquired', 'a', 's' || g, gen_random_uuid(), g, clock_timestamp(), 'bench'
		  FROM generate_series(1, 100000) g;
		ANALYZE lease.event`); err != nil {
		t.Fatal(err)
	}
	var top int64
	if err := conn.QueryRow(ctx, `SELECT max(id) FROM lease.event`).Scan(&top); err != nil {
		t.Fatal(err)
	}
	const maxPages = 16
	for _, q := range []struct {
		name string
		sql  string
		args []any
	}{
		{"no gaps", data.PollSQL, []any{top, 1000}},
		{"gaps", data.PollGapsSQL, []any{top, 1000, []int64{top - 5, top - 3}}},
	} {
		var out string
		if err := conn.QueryRow(ctx, `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) `+q.sql, q.args...).Scan(&out); err != nil {
			t.Fatalf("%s: EXPLAIN: %v", q.name, err)
		}
		var doc []struct{ Plan map[string]any }
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatal(err)
		}
		var nodes []string
		var walk func(n map[string]any)
		walk = func(n map[string]any) {
			nodes = append(nodes, fmt.Sprintf("%v on %v", n["Node Type"], n["Index Name"]))
			if n["Node Type"] == "Seq Scan" && n["Shared Hit Blocks"].(float64)+n["Shared Read Blocks"].(float64) > 0 {
				t.Errorf("%s: plan has a sequential scan of %v", q.name, n["Relation Name"])
			}
			kids, _ := n["Plans"].([]any)
			for _, k := range kids {
				walk(k.(map[string]any))
			}
		}
		walk(doc[0].Plan)
		if !slices.ContainsFunc(nodes, func(s string) bool { return strings.HasSuffix(s, "_id_key") }) {
			t.Errorf("%s: plan %v uses no id index (*_id_key)", q.name, nodes)
		}
		pages := doc[0].Plan["Shared Hit Blocks"].(float64) + doc[0].Plan["Shared Read Blocks"].(float64)
		if pages > maxPages {
			t.Errorf("%s: an idle poll touched %.0f pages (plan %v), want at most %d: a probe, not a scan", q.name, pages, nodes, maxPages)
		}
		t.Logf("%s: %v, %.0f pages", q.name, nodes, pages)
	}
}

// TestListenerWithBadListenDSN: a listen DSN that does not parse stops the
// listener at once with a *DSNError in its state (the store's own Open
// refuses one in its Options the same way), never the password.
func TestListenerWithBadListenDSN(t *testing.T) {
	db := pgtest.New(t)
	const bad = "postgres://u:hunter2@host:notaport/db"
	l := db.Store(t).NewListener(data.ListenerConfig{DSN: bad})
	err := l.Run(context.Background())
	var dsnErr *data.DSNError
	if st := l.State(); !errors.As(err, &dsnErr) || st.Status != data.ListenerStopped || st.Err != err {
		t.Fatalf("Run = %v, state %+v; want a *DSNError, STOPPED with it", err, st)
	}
	if _, err := data.OpenWith(context.Background(), db.URL, data.Options{ListenDSN: bad}); !errors.As(err, &dsnErr) ||
		strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("OpenWith with a bad listen DSN: %v, want a *DSNError without the password", err)
	}
}
