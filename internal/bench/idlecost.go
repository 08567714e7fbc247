package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// The idle monitor's cost to the server:
// Config.MonitorLeases live leases written in bulk, then two feeds side by
// side in one run, each on connections of its own named apart
// (application_name), each applying what it reads to a State as the
// monitor does:
//
//   - idle-cost-whole: the feed as it was, every delta read scanning the
//     whole lease table (monitor.FeedConfig.SweepPages -1);
//   - idle-cost-sweep: the feed as it is, a delta read scanning the next
//     slice of monitor.DefaultSweepPages pages.
//
// In the window, renewalsPerSec leases picked at random are renewed (their
// row written as lease.renew writes it, by the bench's own connection).
// Each row's CPU is the server's: the CPU time of the feed's backends
// (/proc, so the server must run on this machine) over the window, in
// percent of one core; its latencies are a renewal's commit -> the State
// showing its new expiry; its note the age of the view of renewals the
// monitor's header shows.
const idleCostRenewalsPerSec = 10

// idleCost is the idle-cost workload.
func idleCost(ctx context.Context, r *run, w workload) ([]Result, error) {
	n := r.cfg.MonitorLeases
	r.progress(fmt.Sprintf("%s: writing %d leases in bulk", w.name, n))
	if err := r.bulkLeases(ctx, w.name, n); err != nil {
		return nil, err
	}
	feeds := []*costFeed{
		{name: "idle-cost-whole", app: "leasetop-bench-feed-whole", cfg: monitor.FeedConfig{SweepPages: -1}},
		{name: "idle-cost-sweep", app: "leasetop-bench-feed-sweep"},
	}
	fctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { // the feeds stop, then their stores close
		cancel()
		wg.Wait()
		for _, f := range feeds {
			if f.store != nil {
				f.store.Close()
			}
		}
	}()
	for _, f := range feeds {
		if err := f.start(fctx, r.cfg.DSN, &wg); err != nil {
			return nil, err
		}
	}
	r.progress(w.name + ": both feeds' first resync")
	for _, f := range feeds {
		if err := f.waitPassed(ctx, 5*time.Minute); err != nil {
			return nil, err
		}
	}
	if !sleepCtx(ctx, r.cfg.Warmup) {
		return nil, ctx.Err()
	}
	r.progress(fmt.Sprintf("%s: window of %v, %d renewals/s", w.name, r.cfg.Duration, idleCostRenewalsPerSec))
	cpu0 := make([]time.Duration, len(feeds))
	for i, f := range feeds {
		c, err := f.serverCPU(ctx, r)
		if err != nil {
			return nil, err
		}
		cpu0[i] = c
	}
	start := time.Now()
	if err := renewAtRandom(ctx, r, w.name, n, feeds, r.cfg.Duration); err != nil {
		return nil, err
	}
	window := time.Since(start)
	var out []Result
	for i, f := range feeds {
		c, err := f.serverCPU(ctx, r)
		if err != nil {
			return nil, err
		}
		res := newResult(f.name, fmt.Sprintf("%d leases, %d renewals/s: server CPU of the feed's backends; renewal committed -> the monitor's State shows it", n, idleCostRenewalsPerSec), f.seen(), 0)
		res.CPUPct = 100 * (c - cpu0[i]).Seconds() / window.Seconds()
		res.Note = fmt.Sprintf("server cpu %.2f%% of one core; %d of %d renewals seen; renewals view ≤%v old (header)",
			res.CPUPct, res.Ops, f.sent(), f.age().Round(100*time.Millisecond))
		out = append(out, res)
	}
	return out, nil
}

// costFeed is one feed of the idle-cost workload and its State.
type costFeed struct {
	name, app string
	cfg       monitor.FeedConfig
	store     *data.Store

	mu      sync.Mutex
	state   *monitor.State
	pending map[data.Key]pendingRenewal
	latency *Histogram
	total   int
	passed  chan struct{} // closed at the first delta read after the first resync
	once    sync.Once
}

// pendingRenewal is a renewal the State has not shown yet.
type pendingRenewal struct {
	expires time.Time
	at      time.Time
}

// start opens f's store (its own connections, named f.app) and runs its
// feed into its State until ctx ends.
func (f *costFeed) start(ctx context.Context, dsn string, wg *sync.WaitGroup) error {
	cfg, err := data.ParsePoolConfig(dsn)
	if err != nil {
		return err
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = f.app
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err == nil {
		err = pool.Ping(ctx)
	}
	if err != nil {
		return fmt.Errorf("connect: %w", data.Translate(err))
	}
	f.store = data.New(pool)
	f.state = monitor.NewState(monitor.Config{EventLimit: 1})
	f.pending, f.latency, f.passed = map[data.Key]pendingRenewal{}, &Histogram{}, make(chan struct{})
	feed := monitor.NewFeed(f.store, f.cfg)
	stop := feed.Start(ctx)
	wg.Go(func() {
		defer stop()
		for {
			b, ok := feed.Next()
			if !ok {
				return
			}
			f.apply(b)
		}
	})
	return nil
}

// apply applies b and records the renewals it made visible.
func (f *costFeed) apply(b monitor.Batch) {
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.state.Apply(b, now)
	for k, p := range f.pending {
		if l, ok := f.state.Lease(k); ok && !l.ExpiresAt.Before(p.expires) {
			f.latency.Record(now.Sub(p.at))
			delete(f.pending, k)
		}
	}
	for _, it := range b.Items {
		if it.Delta != nil && f.state.Synced() {
			f.once.Do(func() { close(f.passed) })
		}
	}
}

// waitPassed waits for f's first resync and a delta read after it.
func (f *costFeed) waitPassed(ctx context.Context, limit time.Duration) error {
	select {
	case <-f.passed:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(limit):
		return fmt.Errorf("%s: no first pass within %v", f.name, limit)
	}
}

// expect records a renewal committed at at with its new expiry.
func (f *costFeed) expect(k data.Key, expires, at time.Time) {
	f.mu.Lock()
	f.pending[k] = pendingRenewal{expires: expires, at: at}
	f.total++
	f.mu.Unlock()
}

func (f *costFeed) seen() *Histogram {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.latency
}

func (f *costFeed) sent() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.total
}

func (f *costFeed) age() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state.Health(time.Now()).RenewalsAge
}

// serverCPU is the CPU time of every server backend named f.app.
func (f *costFeed) serverCPU(ctx context.Context, r *run) (time.Duration, error) {
	rows, err := r.admin.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, f.app)
	if err != nil {
		return 0, err
	}
	var pids []uint32
	for rows.Next() {
		var pid uint32
		if err := rows.Scan(&pid); err != nil {
			rows.Close()
			return 0, err
		}
		pids = append(pids, pid)
	}
	rows.Close()
	if len(pids) == 0 {
		return 0, fmt.Errorf("%s: no backend named %s", f.name, f.app)
	}
	var total time.Duration
	for _, pid := range pids {
		c, err := backendCPU(pid)
		if err != nil {
			return 0, fmt.Errorf("%s: the server's CPU needs the server on this machine: %w", f.name, err)
		}
		total += c
	}
	return total, nil
}

// renewAtRandom renews idleCostRenewalsPerSec random leases of the n of tag
// a second for d, each as lease.renew writes its row, and tells feeds.
func renewAtRandom(ctx context.Context, r *run, tag string, n int, feeds []*costFeed, d time.Duration) error {
	tick := time.NewTicker(time.Second / idleCostRenewalsPerSec)
	defer tick.Stop()
	end := time.After(d)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-end:
			return nil
		case <-tick.C:
		}
		g := 1 + rand.IntN(n)
		k := data.Key{Account: fmt.Sprintf("%s-a%04d", r.account(tag), g%1000), Session: fmt.Sprintf("s%07d", g)}
		var exp time.Time
		err := r.admin.QueryRow(ctx, `UPDATE lease.session_lease SET renewed_at = now(), expires_at = now() + $3::interval
			 WHERE account_id = $1 AND session_id = $2 RETURNING expires_at`, k.Account, k.Session, holdTTL).Scan(&exp)
		if err != nil {
			return fmt.Errorf("renew %v: %w", k, err)
		}
		at := time.Now()
		for _, f := range feeds {
			f.expect(k, exp, at)
		}
	}
}
