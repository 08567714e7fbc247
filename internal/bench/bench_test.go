package bench_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/bench"
	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/pgserver"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestRunAllWorkloads runs every workload briefly against a real database and
// checks the report's shape, never its speed.
func TestRunAllWorkloads(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	store := db.Store(t)
	// A lease that is not bench's: it must come out untouched.
	theirs := data.Key{Account: "acme", Session: "chat-1"}
	grant, err := store.Acquire(ctx, theirs, uuid.New(), time.Hour, "app")
	if err != nil {
		t.Fatalf("Acquire(%v): %v", theirs, err)
	}
	var progress []string
	rep, err := bench.Run(ctx, bench.Config{
		DSN: db.URL, Clients: 4, Keys: 16, Duration: 300 * time.Millisecond, Warmup: 50 * time.Millisecond,
		Progress: func(name string) { progress = append(progress, name) },
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	told := strings.Join(progress, ", ") + ", "
	for _, name := range bench.Names() {
		// Every workload a run without --only selects (the opt-in ones are
		// the package's to say, not a copy of its list here).
		if (bench.Config{}).Selects(name) && !strings.Contains(told, name+", ") {
			t.Errorf("progress never named %s: %q", name, told)
		}
	}
	for _, res := range rep.Results {
		if res.Error != "" {
			t.Errorf("%s failed: %s", res.Name, res.Error)
			continue
		}
		// A propagation latency is the receive time on the server's clock
		// minus the event's time: under load the clock's reading is off by
		// up to half its round trip, so a sub-millisecond median may read 0.
		crossClock := strings.HasPrefix(res.Name, "propagation-") && !strings.HasSuffix(res.Name, "-write")
		if res.Ops == 0 || res.P50ms < 0 || res.P50ms == 0 && !crossClock || res.P99ms < res.P50ms {
			t.Errorf("%s: ops %d, p50 %v ms, p99 %v ms; want ops > 0 and 0 < p50 <= p99", res.Name, res.Ops, res.P50ms, res.P99ms)
		}
		t.Logf("%-20s %8.0f/s p50 %.3f ms p99 %.3f ms n=%d %s", res.Name, res.OpsPerSec, res.P50ms, res.P99ms, res.Ops, res.Note)
	}
	for _, r := range rep.Ratios {
		t.Logf("%s = %.2f%s %s", r.Name, r.Value, r.Unit, r.Target)
	}
	// The closed loops' server CPU per op, read from /proc (the test's server
	// runs on this machine): what their ratios compare.
	for _, res := range rep.Results {
		if closedLoopWhole[res.Name] && res.Error == "" && res.ServerCPUus <= 0 {
			t.Errorf("%s: server CPU per op %v us, want it measured", res.Name, res.ServerCPUus)
		}
	}
	if got, want := len(rep.Ratios), 50; got != want {
		t.Errorf("%d ratios, want %d (one per comparison)", got, want)
	}
	assertCleanedUp(t, db.Conn(t))
	snap, err := store.Snapshot(ctx)
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	if len(snap.Leases) != 1 || snap.Leases[0].Key != theirs || snap.Leases[0].Fence != grant.Fence {
		t.Errorf("leases after bench = %+v, want only %v with fence %d", snap.Leases, theirs, grant.Fence)
	}
}

// closedLoopWhole are some closed-loop workloads' whole-op rows.
var closedLoopWhole = map[string]bool{"upsert": true, "acquire": true, "seed-cycle": true, "cycle": true, "seed-renew": true, "renew": true}

// TestLimitsWorkloads runs the opt-in limits rows briefly and checks their
// shape, never their speed: every row measured, the hammer's note and the
// fairness row's ratio present, and nothing of bench's left behind.
func TestLimitsWorkloads(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	rep, err := bench.Run(context.Background(), bench.Config{
		DSN: db.URL, Clients: 4, Keys: 16, Duration: 500 * time.Millisecond, Warmup: 50 * time.Millisecond,
		Only: []string{"limits"},
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := map[string]string{"limits-cycle-free": "", "limits-cycle": "", "limits-hammer": "slots ", "limits-hammer-wait": "slots ", "limits-fair-idle": "", "limits-fair-backlog": "the idle row's"}
	for _, res := range rep.Results {
		note, ok := want[res.Name]
		if !ok {
			if res.Error != "" { // a workload that failed reports one row under its own name
				t.Errorf("%s: %s", res.Name, res.Error)
			}
			continue
		}
		delete(want, res.Name)
		if res.Error != "" || res.Ops == 0 || !strings.Contains(res.Note, note) {
			t.Errorf("%s: ops %d, error %q, note %q (want it to say %q)", res.Name, res.Ops, res.Error, res.Note, note)
		}
	}
	if len(want) > 0 {
		t.Errorf("rows missing: %v", want)
	}
	var left int
	if err := db.Conn(t).QueryRow(context.Background(), `SELECT (SELECT count(*) FROM lease.account_limit) + (SELECT count(*) FROM lease.limit_slot)
		+ (SELECT count(*) FROM lease.queue_ticket) + (SELECT count(*) FROM lease.session_lease)`).Scan(&left); err != nil || left != 0 {
		t.Errorf("rows left after bench: %d, %v", left, err)
	}
}

// TestProductionWorkloads runs the opt-in pooler, poll-cost and listen-cost workloads
// briefly, through a real PgBouncer, and checks the report's shape and
// ratios, never their speed.
func TestProductionWorkloads(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	rep, err := bench.Run(context.Background(), bench.Config{
		DSN: db.URL, PoolerDSN: db.Via(t, pgtest.Bouncer(t, pgserver.BouncerOptions{PoolSize: 6})),
		Clients: 4, Keys: 16, Duration: 700 * time.Millisecond, Warmup: 50 * time.Millisecond, MonitorLeases: 2000,
		Only: []string{"pooler", "poll-cost", "listen-cost"},
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var names []string
	for _, res := range rep.Results {
		names = append(names, res.Name)
		if strings.HasSuffix(res.Name, "-cost-renewals") { // once a second: none may fall in a 700 ms window
			continue
		}
		if res.Error != "" || res.Ops == 0 || res.P50ms <= 0 {
			t.Errorf("%s: error %q, ops %d, p50 %v ms; want ops > 0 and a p50", res.Name, res.Error, res.Ops, res.P50ms)
		}
	}
	if got, want := strings.Join(names, ","), "pooler-direct,pooler,poll-cost,poll-cost-server,poll-cost-renewals,listen-cost,listen-cost-server,listen-cost-renewals"; got != want {
		t.Errorf("results %s, want %s", got, want)
	}
	var ratios []string
	for _, r := range rep.Ratios {
		ratios = append(ratios, r.Name)
	}
	for _, want := range []string{"acquire+release cycles/s through PgBouncer / direct", "idle poll at 100,000 leases, server time p50",
		"idle catch-up read of a listening feed at 100,000 leases, server time p50"} {
		if !slices.Contains(ratios, want) {
			t.Errorf("ratios %q, want %q", ratios, want)
		}
	}
	assertCleanedUp(t, db.Conn(t))
}

// assertCleanedUp checks that no bench lease, event or scratch schema is left.
func assertCleanedUp(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	for _, q := range []string{
		`SELECT count(*) FROM lease.session_lease WHERE account_id LIKE 'leasetop-bench-%'`,
		`SELECT count(*) FROM lease.event WHERE account_id LIKE 'leasetop-bench-%'`,
		`SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'lease\_bench\_%'`,
	} {
		var n int
		if err := conn.QueryRow(ctx, q).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if n != 0 {
			t.Errorf("%s = %d after bench, want 0", q, n)
		}
	}
}

// TestMonitorWorkload runs the opt-in monitor workload on a few thousand
// leases and checks that it reports every figure.
func TestMonitorWorkload(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	rep, err := bench.Run(context.Background(), bench.Config{
		DSN: db.URL, Clients: 2, Keys: 8, Duration: 500 * time.Millisecond, Warmup: 100 * time.Millisecond,
		Only: []string{"monitor"}, MonitorLeases: 3000,
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	byName := map[string]bench.Result{}
	for _, r := range rep.Results {
		if r.Error != "" {
			t.Fatalf("%s failed: %s", r.Name, r.Error)
		}
		byName[r.Name] = r
		t.Logf("%-15s p50 %.3f ms p99 %.3f ms n=%d cpu %.1f%% rss %.0f MB %s", r.Name, r.P50ms, r.P99ms, r.Ops, r.CPUPct, r.RSSMB, r.Note)
	}
	if r := byName["monitor-load"]; r.P50ms <= 0 || r.RSSMB <= 0 {
		t.Errorf("monitor-load = %+v, want a load time and resident memory", r)
	}
	for _, name := range []string{"monitor-idle", "monitor-active"} {
		if r := byName[name]; r.CPUPct <= 0 || r.RSSMB <= 0 {
			t.Errorf("%s = %+v, want CPU and resident memory", name, r)
		}
	}
	if r := byName["monitor-frame"]; r.Ops == 0 || r.P50ms <= 0 {
		t.Errorf("monitor-frame = %+v, want frames timed", r)
	}
	for name, keys := range map[string]uint64{"monitor-sort": 4, "monitor-filter": 10} {
		if r := byName[name]; r.Ops != keys || r.P50ms <= 0 {
			t.Errorf("%s = %+v, want %d keys timed to their frames", name, r, keys)
		}
	}
	verdicts := 0
	for _, ra := range rep.Ratios {
		if ra.Met != nil {
			verdicts++
		}
	}
	if verdicts != 4 {
		t.Errorf("%d targets with a verdict, want the monitor's 4: %+v", verdicts, rep.Ratios)
	}
	assertCleanedUp(t, db.Conn(t))
}

// TestRunCancelledCleansUp cancels a run while a workload runs: Run must
// return the cancellation and still remove everything it created.
func TestRunCancelledCleansUp(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	watch := db.Conn(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	_, err := bench.Run(ctx, bench.Config{
		DSN: db.URL, Clients: 2, Keys: 4, Duration: time.Minute, Warmup: 0, Only: []string{"renew"},
		Progress: func(string) {
			wg.Go(func() { // cancel once the renew workload holds its keys, i.e. is running
				defer cancel()
				deadline := time.Now().Add(30 * time.Second)
				for time.Now().Before(deadline) {
					var n int
					err := watch.QueryRow(ctx, `SELECT count(*) FROM lease.session_lease WHERE account_id LIKE 'leasetop-bench-%'`).Scan(&n)
					if err != nil || n >= 4 {
						return
					}
					time.Sleep(10 * time.Millisecond) // polling a condition, with a deadline
				}
				t.Error("the renew workload never held its keys")
			})
		},
	})
	wg.Wait()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run after cancel: err = %v, want context.Canceled", err)
	}
	assertCleanedUp(t, watch)
}

// TestHandoverWorkload runs the opt-in handover workload briefly: asks are
// handed over, timed, and nothing of bench's is left behind.
func TestHandoverWorkload(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	rep, err := bench.Run(context.Background(), bench.Config{
		DSN: db.URL, Clients: 2, Keys: 8, Duration: 500 * time.Millisecond, Warmup: 100 * time.Millisecond,
		Only: []string{"handover"},
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	// Two measures (a fresh asker, a listening one), each a total and its
	// four parts, every one with the same rounds.
	want := []string{"handover", "handover ask->handed-over", "handover handed-over->holds", "handover ask->told", "handover handover-call"}
	for _, n := range want[1:] {
		want = append(want, strings.Replace(n, "handover", "handover listening", 1))
	}
	want = append(want[:5], append([]string{"handover listening"}, want[5:]...)...)
	if len(rep.Results) != len(want) {
		t.Fatalf("results = %+v, want %d rows: %q", rep.Results, len(want), want)
	}
	for i, res := range rep.Results {
		if res.Name != want[i] || res.Error != "" || res.Ops == 0 || res.Ops != rep.Results[i/5*5].Ops || (i%5 == 0 && res.P50ms <= 0) {
			t.Fatalf("result %d = %+v, want %q with the rounds of its total", i, res, want[i])
		}
	}
	t.Logf("handover p50 %.3f ms p99 %.3f ms n=%d", rep.Results[0].P50ms, rep.Results[0].P99ms, rep.Results[0].Ops)
	assertCleanedUp(t, db.Conn(t))
	var n int
	if err := db.Conn(t).QueryRow(context.Background(), `SELECT count(*) FROM lease.handover_ask WHERE account_id LIKE 'leasetop-bench-%'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d bench asks left (%v), want 0", n, err)
	}
}

// TestInboxWorkload runs the opt-in inbox workload briefly: a row per
// rate, each with messages received and timed, and nothing of bench's
// left behind (its messages and their inboxes' rows included).
func TestInboxWorkload(t *testing.T) {
	db := pgtest.New(t)
	rep, err := bench.Run(context.Background(), bench.Config{
		DSN: db.URL, Clients: 2, Keys: 8, Duration: 500 * time.Millisecond, Warmup: 100 * time.Millisecond,
		Only: []string{"inbox"},
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := []string{"inbox 100/s", "inbox 1000/s"}
	if len(rep.Results) != len(want) {
		t.Fatalf("results = %+v, want %q", rep.Results, want)
	}
	for i, res := range rep.Results {
		if res.Name != want[i] || res.Error != "" || res.Ops == 0 || res.P50ms <= 0 || res.P99ms < res.P50ms {
			t.Errorf("result %d = %+v, want %q with messages received and 0 < p50 <= p99", i, res, want[i])
		}
	}
	assertCleanedUp(t, db.Conn(t))
	var n int
	if err := db.Conn(t).QueryRow(context.Background(), `SELECT (SELECT count(*) FROM lease.message WHERE account_id LIKE 'leasetop-bench-%')
		+ (SELECT count(*) FROM lease.inbox WHERE account_id LIKE 'leasetop-bench-%')`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d bench messages and inbox rows left (%v), want 0", n, err)
	}
}
