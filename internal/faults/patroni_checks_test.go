package faults_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/pgserver"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// walLag returns how many bytes of WAL the primary at primaryURL has
// written that the standby at standbyURL has not received.
func (r *rig) walLag(primaryURL, standbyURL string) int64 {
	r.t.Helper()
	ctx := context.Background()
	var lsn string
	if err := queryOne(ctx, primaryURL, `SELECT pg_current_wal_lsn()::text`, &lsn); err != nil {
		r.t.Fatalf("the primary's WAL position: %v", err)
	}
	var lag int64
	if err := queryOne(ctx, standbyURL, `SELECT pg_wal_lsn_diff($1::pg_lsn, coalesce(pg_last_wal_receive_lsn(), '0/0'))::bigint`, &lag, lsn); err != nil {
		r.t.Fatalf("the standby's WAL position: %v", err)
	}
	return lag
}

// queryOne scans one value of sql on a connection of its own to url.
func queryOne(ctx context.Context, url, sql string, dst any, args ...any) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return conn.QueryRow(ctx, sql, args...).Scan(dst)
}

// idsRiseAcross checks that every event the new primary recorded (after
// promoted) has an id above lastBefore, the highest id the old primary had
// given when the fault began (lost events included), and returns how many
// it checked.
func (r *rig) idsRiseAcross(lastBefore int64, promoted time.Time) int {
	r.t.Helper()
	n := 0
	for _, ev := range r.events() {
		if !ev.At.After(promoted) {
			continue
		}
		n++
		if ev.ID <= lastBefore {
			r.t.Errorf("the new primary recorded event %d (%s %s) at %s, but the old one had already given id %d",
				ev.ID, ev.Kind, ev.Key, ev.At.Format("15:04:05.000"), lastBefore)
		}
	}
	if n == 0 {
		r.t.Error("the new primary recorded no event: no id to compare")
	}
	return n
}

// rejoinedAgrees checks the old primary once it has rejoined as a replica
// (at url, read-only): when it has replayed the new primary's history, its
// lease.event equals the new primary's, event by event, and holds nothing
// more: what it accepted that the failover lost (the lost grants) was
// discarded when Patroni rewound it, and nobody who reads it later
// believes it.
func (r *rig) rejoinedAgrees(url string) {
	r.t.Helper()
	want := r.events()
	var old *data.Store // opened once it accepts connections
	defer func() {
		if old != nil {
			old.Close()
		}
	}()
	var got []data.Event
	pgtest.Eventually(r.t, 60*time.Second, "the rejoined old primary to replay the new primary's history", func() bool {
		if old == nil {
			s, err := data.Open(context.Background(), url)
			if err != nil {
				return false
			}
			old = s
		}
		got = got[:0]
		for ev, err := range old.Events(context.Background(), 0) {
			if err != nil {
				return false // it may still be starting
			}
			got = append(got, ev)
		}
		return len(got) >= len(want)
	})
	for i, w := range want {
		g := got[i]
		if g.ID != w.ID || g.Kind != w.Kind || g.Key != w.Key || g.RunID != w.RunID || g.Fence != w.Fence {
			r.t.Errorf("the rejoined old primary's event #%d is %d %s %s run %v fence %d, the new primary's %d %s %s run %v fence %d",
				i, g.ID, g.Kind, g.Key, g.RunID, g.Fence, w.ID, w.Kind, w.Key, w.RunID, w.Fence)
			return
		}
	}
	if len(got) != len(want) {
		r.t.Errorf("the rejoined old primary holds %d events, the new primary %d: it kept what the failover lost", len(got), len(want))
	}
}

// firstEventAfter returns the id of the first event recorded after t0
// (the new primary's first), or the highest id + 1 when there is none.
func (r *rig) firstEventAfter(t0 time.Time) int64 {
	r.t.Helper()
	var last int64
	for _, ev := range r.events() {
		if ev.At.After(t0) {
			return ev.ID
		}
		last = ev.ID
	}
	return last + 1
}

// writableFor watches the node at url from now on, polling every 50 ms,
// until it no longer accepts writes (it is in recovery, or refuses
// connections); the function it returns waits for that and returns how
// long after the start it was.
func writableFor(url string) func() time.Duration {
	t0 := time.Now()
	done := make(chan time.Duration, 1)
	go func() {
		for {
			var standby bool
			err := queryOne(context.Background(), url, `SELECT pg_is_in_recovery()`, &standby)
			if err != nil || standby || time.Since(t0) > 2*time.Minute {
				done <- time.Since(t0)
				return
			}
			time.Sleep(50 * time.Millisecond) // polling a condition until a deadline
		}
	}()
	return func() time.Duration { return <-done }
}

// padWAL writes on the primary (the rig's store) until Patroni reports
// standby more than limit bytes behind the leader (GET /cluster, computed
// from the positions in etcd, what its failover check reads).
func (r *rig) padWAL(c *pgserver.Cluster, standby *pgserver.Node, limit int64) {
	r.t.Helper()
	r.exec(`CREATE TABLE IF NOT EXISTS wal_pad (b text)`)
	pgtest.Eventually(r.t, 60*time.Second, "Patroni to see the standby past maximum_lag_on_failover", func() bool {
		lag, err := c.Lag(context.Background(), standby)
		if err == nil && lag > limit {
			return true
		}
		r.exec(`INSERT INTO wal_pad SELECT repeat(md5(i::text), 32) FROM generate_series(1, 500) i`)
		return false
	})
}

// waitRunsExplained is waitRuns that, when the runs do not start, says who
// holds what: the database's leases and the holders' beliefs.
func (r *rig) waitRunsExplained(t *testing.T, n int) {
	t.Helper()
	r.mu.Lock()
	want := len(r.rec.Started) + n
	r.mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r.mu.Lock()
		got := len(r.rec.Started)
		r.mu.Unlock()
		if got >= want {
			return
		}
		if time.Now().After(deadline) {
			var b strings.Builder
			for k, l := range r.leases() {
				fmt.Fprintf(&b, "\n  database: %s held by %s fence %d until %s", k, l.Holder, l.Fence, l.ExpiresAt.Format("15:04:05.000"))
			}
			r.mu.Lock()
			for run, s := range r.rec.Started {
				if _, ended := r.rec.Ended[run]; !ended {
					fmt.Fprintf(&b, "\n  holder %s believes it holds %s fence %d", s.Holder, s.Key, s.Fence)
				}
			}
			r.mu.Unlock()
			t.Fatalf("timed out after 30s waiting for %d runs to start (%d of %d):%s", n, got, want, b.String())
		}
		time.Sleep(10 * time.Millisecond) // polling a condition until the deadline
	}
}
