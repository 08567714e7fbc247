package monitor_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/monitor"
)

// The monitor at scale (docs/BENCHMARKS.md): 100,000 live leases. These
// benchmarks report; they never fail on speed. Run them with
//
//	go test ./monitor -run '^$' -bench Scale -benchtime 20x

const scaleLeases = 100_000

// seedScale writes n live leases (1000 accounts), renewedRecently of them
// renewed just now and the rest ten minutes ago, and 10,000 events, straight
// into the tables with triggers off: a snapshot needs rows, not their
// history. It returns a server time between the two groups' renewals.
func seedScale(b *testing.B, db pgtest.DB, n, renewedRecently int) time.Time {
	b.Helper()
	ctx := context.Background()
	conn := db.Conn(b)
	var since time.Time
	for _, q := range []string{
		`SET session_replication_role = replica`,
		fmt.Sprintf(`INSERT INTO lease.session_lease
			(account_id, session_id, run_id, holder, fence, acquired_at, renewed_at, expires_at)
			SELECT 'acct-' || lpad((g %% 1000)::text, 4, '0'), 'sess-' || lpad(g::text, 6, '0'), gen_random_uuid(),
			       'device-' || (g %% 500), nextval('lease.fence_seq'), now() - interval '1 hour',
			       CASE WHEN g <= %d THEN now() ELSE now() - interval '10 minutes' END, now() + interval '1 hour'
			  FROM generate_series(1, %d) g`, renewedRecently, n),
		`INSERT INTO lease.event (at, kind, account_id, session_id, run_id, fence, expires_at, holder)
			SELECT now() - interval '1 hour' + g * interval '1 ms', 'acquired', 'acct-0001', 'sess-' || g,
			       gen_random_uuid(), g, now() + interval '1 hour', 'device'
			  FROM generate_series(1, 10000) g`,
		`RESET session_replication_role`,
		`ANALYZE lease.session_lease`,
		`ANALYZE lease.event`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			b.Fatalf("seed: %v", err)
		}
	}
	if err := conn.QueryRow(ctx, `SELECT now() - interval '1 minute'`).Scan(&since); err != nil {
		b.Fatalf("seed: %v", err)
	}
	return since
}

// BenchmarkScaleSnapshotLoad is the monitor's first picture: one ReadSync of
// 100,000 leases and the recent events, applied to a fresh State.
func BenchmarkScaleSnapshotLoad(b *testing.B) {
	db := pgtest.New(b)
	seedScale(b, db, scaleLeases, 0)
	store := db.Store(b)
	ctx := context.Background()
	var st *monitor.State
	b.ReportAllocs()
	for b.Loop() {
		sync, err := store.ReadSync(ctx, data.SyncQuery{After: -1, Tail: 500})
		if err != nil {
			b.Fatalf("ReadSync: %v", err)
		}
		st = monitor.NewState(monitor.Config{})
		st.ApplySync(sync, time.Now())
	}
	if st.Len() != scaleLeases {
		b.Fatalf("State holds %d leases, want %d", st.Len(), scaleLeases)
	}
	b.ReportMetric(heapMB(), "heap-MB")
	runtime.KeepAlive(st)
}

// BenchmarkScaleDeltaRead is the once-a-second read of renewals
// (Store.Changed) on 100,000 leases, applied to the State, for several
// numbers of leases renewed inside the read's window.
func BenchmarkScaleDeltaRead(b *testing.B) {
	for _, renewed := range []int{0, 1000, 20000} {
		b.Run(fmt.Sprintf("renewed=%d", renewed), func(b *testing.B) {
			db := pgtest.New(b)
			since := seedScale(b, db, scaleLeases, renewed)
			store := db.Store(b)
			ctx := context.Background()
			sync, err := store.ReadSync(ctx, data.SyncQuery{After: -1, Tail: 500})
			if err != nil {
				b.Fatalf("ReadSync: %v", err)
			}
			st := monitor.NewState(monitor.Config{})
			st.ApplySync(sync, time.Now())
			rows := 0
			for b.Loop() {
				snap, err := store.Changed(ctx, since)
				if err != nil {
					b.Fatalf("Changed: %v", err)
				}
				rows = len(snap.Leases)
				st.ApplyDelta(snap, time.Now())
			}
			if rows != renewed {
				b.Fatalf("Changed returned %d leases, want %d", rows, renewed)
			}
			b.ReportMetric(float64(rows), "rows")
		})
	}
}

// BenchmarkScaleApplyEvent is one ownership transition applied to a State
// that holds 100,000 leases: at 1000 transitions/s, a thousand of these a
// second.
func BenchmarkScaleApplyEvent(b *testing.B) {
	st := monitor.NewState(monitor.Config{})
	now := time.Now()
	leases := make([]data.Lease, scaleLeases)
	for i := range leases {
		leases[i] = data.Lease{
			Key:   data.Key{Account: fmt.Sprintf("acct-%04d", i%1000), Session: fmt.Sprintf("sess-%06d", i)},
			RunID: uuid.New(), Fence: int64(i + 1), AcquiredAt: now, RenewedAt: now, ExpiresAt: now.Add(time.Hour),
		}
	}
	st.ApplySync(data.Sync{Snapshot: data.Snapshot{Leases: leases, Clock: data.NewClock(now, now, now)}}, now)
	id := int64(0)
	b.ReportAllocs()
	for b.Loop() {
		id++
		l := leases[id%scaleLeases]
		ev := data.Event{ID: id, Kind: data.KindTakenOver, At: now, Key: l.Key, RunID: uuid.New(), PrevRunID: l.RunID,
			Fence: int64(scaleLeases) + id, PrevFence: l.Fence, ExpiresAt: now.Add(time.Hour)}
		st.ApplyEvent(ev, now)
	}
}

func heapMB() float64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapInuse) / (1 << 20)
}
