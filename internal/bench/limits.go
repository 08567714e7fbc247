package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
)

// The limits' rows (sql/limits.sql): what a limit costs a grant, a renewal
// and an account that is not the busy one.
const (
	limitsCycleDesc = "lease.acquire of a free key + lease.release, every key its own account with a limit of 2 (a slot taken and freed)"
	limitsFreeDesc  = "the same cycle, every key its own account without a limit (one probe of account_limit)"
	renewLimitDesc  = "lease.renew of a lease in an account with a limit (a slot held: renewals never touch it)"
	hammerDesc      = "time to a grant for %d clients hammering one account with a limit of %d, each holding its slot %s then releasing it"
	fairIdleDesc    = "account B's acquire (limit %d, %d clients) with the database otherwise idle"
	fairBusyDesc    = "account B's acquire beside account A at its limit with %d live runs and %d queued tickets"
)

// The hammer's account limit and how long a grant holds its slot.
const (
	hammerSlots = 4
	hammerHold  = 250 * time.Millisecond
)

// fairBacklog is account A's backlog in the fairness row.
const fairBacklog = 10000

// ownAccounts gives each of c's keys an account of its own: the limits'
// cycles spread over as many accounts as keys (--keys).
func ownAccounts(c *client) {
	for i, k := range c.keys {
		c.keys[i] = data.Key{Account: k.Account + "-" + k.Session, Session: "s"}
	}
}

// limitsCycleFree is the limits' cycle without limits.
func limitsCycleFree(r *run) loop {
	l := cycle(r)
	l.setup = func(ctx context.Context, c *client) error { ownAccounts(c); return nil }
	l.rows = []row{{name: "limits-cycle-free", desc: limitsFreeDesc}}
	return l
}

// limitsCycle is the limits' cycle with a limit of 2 on every account.
func limitsCycle(r *run) loop {
	l := cycle(r)
	l.setup = func(ctx context.Context, c *client) error {
		ownAccounts(c)
		b := &pgx.Batch{}
		for _, k := range c.keys {
			b.Queue(`SELECT lease.set_limit($1, '', 2)`, k.Account)
		}
		return c.conn.SendBatch(ctx, b).Close()
	}
	l.rows = []row{{name: "limits-cycle", desc: limitsCycleDesc}}
	return l
}

// renewLimited is renew in an account whose limit admits all its keys.
func renewLimited(r *run) loop {
	var once sync.Once
	var setErr error
	l := renewLoop(r.libAcquire, "SELECT lease.renew($1, $2, $3, $4)")
	acquireAll := l.setup
	l.setup = func(ctx context.Context, c *client) error {
		once.Do(func() {
			_, setErr = c.conn.Exec(ctx, `SELECT lease.set_limit($1, '', $2)`, c.keys[0].Account, r.cfg.Keys)
		})
		if setErr != nil {
			return setErr
		}
		return acquireAll(ctx, c)
	}
	l.rows = []row{{name: "renew-limited", desc: renewLimitDesc}}
	return l
}

// hammer counts the hammer's grants while it records.
type hammer struct {
	recording atomic.Bool
	attempts  atomic.Int64
	mu        sync.Mutex
	holds     []hold    // every grant's, recording or not: measure keeps the window's part
	toGrant   Histogram // from a client's first attempt to its grant
	granted   Histogram // one acquire that granted
}

// hold is how long one grant held its slot, as its client saw it: from the
// grant's return to the release's.
type hold struct{ from, to time.Time }

// held records a grant's hold, from got to now (its release returned).
func (h *hammer) held(got time.Time) {
	h.mu.Lock()
	h.holds = append(h.holds, hold{from: got, to: time.Now()})
	h.mu.Unlock()
}

// window returns the grants made in [start, end) and the slot time held in
// it: each hold's part in the window, those of the grants made before it
// began or released after it ended included. (Counting, instead, the whole
// holds of the grants whose attempts began in the window leaves out the
// grants its last waits would have made, a wait's length of them: the
// clients stop waiting when the window ends.)
func (h *hammer) window(start, end time.Time) (grants int64, held time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, g := range h.holds {
		if !g.from.Before(start) && g.from.Before(end) {
			grants++
		}
		if from, to := later(g.from, start), earlier(g.to, end); to.After(from) {
			held += to.Sub(from)
		}
	}
	return grants, held
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// runLimitsHammer: r.cfg.Clients clients on one account with a limit of
// hammerSlots, each trying to acquire a session of its own, holding it
// hammerHold and releasing it. It reports the time to a grant, how full
// the slots stayed and the attempts per grant.
func (r *run) runLimitsHammer(ctx context.Context, w workload) ([]Result, error) {
	conns, err := r.openConns(ctx, r.cfg.Clients)
	if err != nil {
		return nil, err
	}
	defer closeConns(conns)
	account := r.account(w.name)
	if _, err := r.admin.Exec(ctx, `SELECT lease.set_limit($1, '', $2)`, account, hammerSlots); err != nil {
		return nil, fmt.Errorf("set the hammer's limit: %w", err)
	}
	r.checkpoint(ctx)
	h := &hammer{}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var stop atomic.Bool // not ctx: a cancelled query closes its connection
	var wg sync.WaitGroup
	for i, conn := range conns {
		key := data.Key{Account: account, Session: fmt.Sprintf("s%03d", i)}
		wg.Go(func() {
			if err := h.client(ctx, r, conn, key, &stop); err != nil && ctx.Err() == nil {
				cancel(err)
			}
		})
	}
	m, err := h.measure(ctx, r, func() { stop.Store(true) }, &wg)
	if err != nil {
		return nil, err
	}
	res := newResult(w.name, fmt.Sprintf(hammerDesc, r.cfg.Clients, hammerSlots, hammerHold), &h.toGrant, m.window)
	res.Note = fmt.Sprintf("slots %.1f%% full; %.1f attempts per grant; a granting acquire p50 %.2f ms",
		100*m.util, m.attempts, ms(h.granted.Quantile(0.5)))
	h.cpuPerGrant(&res, m)
	return []Result{res}, nil
}

// hammerWindow is what one measured window of a hammer gave.
type hammerWindow struct {
	window   time.Duration
	util     float64 // how full the slots stayed: held time / (slots × window)
	attempts float64 // acquire calls per grant
	grants   int64   // the grants made in the window
	cpu      time.Duration
	cpuErr   error // the server's CPU could not be read
}

// measure runs the hammer's clients, started by the caller, through the
// warm-up and the measured window, then stops them (stop) and waits for
// them (wg). It fails when a client failed (ctx's cause) or nothing was
// granted.
func (h *hammer) measure(ctx context.Context, r *run, stop func(), wg *sync.WaitGroup) (hammerWindow, error) {
	sleepCtx(ctx, r.cfg.Warmup)
	cpu0, cpuErr := r.serverCPU()
	h.recording.Store(true)
	start := time.Now()
	sleepCtx(ctx, r.cfg.Duration)
	h.recording.Store(false)
	end := time.Now()
	m := hammerWindow{window: end.Sub(start)}
	cpu1, err := r.serverCPU()
	stop()
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return m, err
	}
	grants, held := h.window(start, end)
	if grants == 0 {
		return m, fmt.Errorf("no grant in %s", m.window)
	}
	m.grants = grants
	m.util = float64(held) / float64(hammerSlots*m.window.Nanoseconds())
	m.attempts = float64(h.attempts.Load()) / float64(grants)
	m.cpu, m.cpuErr = cpu1.since(cpu0), errors.Join(cpuErr, err)
	return m, nil
}

// client is one hammering client: attempt until granted, hold, release.
// A run keeps its id while it tries, as lease.Client.Wait does, so its
// refusal is recorded once.
func (h *hammer) client(ctx context.Context, r *run, conn *pgx.Conn, key data.Key, stop *atomic.Bool) error {
	for !stop.Load() {
		recording := h.recording.Load()
		first := time.Now()
		run := uuid.New()
		for {
			t0 := time.Now()
			ok, err := r.libAcquire(ctx, conn, key, run, time.Minute)
			if err != nil {
				return err
			}
			if recording {
				h.attempts.Add(1)
			}
			if ok {
				if recording {
					h.mu.Lock()
					h.granted.Record(time.Since(t0))
					h.toGrant.Record(time.Since(first))
					h.mu.Unlock()
				}
				break
			}
			if stop.Load() {
				return nil
			}
		}
		got := time.Now()
		sleepCtx(ctx, hammerHold)
		if err := r.libRelease(ctx, conn, key, run); err != nil {
			return err
		}
		h.held(got)
	}
	return nil
}

// runLimitsFair measures account B's acquire twice in one run: on an
// otherwise idle database, then beside account A at its limit with a
// backlog of fairBacklog live runs and as many queued tickets.
func (r *run) runLimitsFair(ctx context.Context, w workload) ([]Result, error) {
	conns, err := r.openConns(ctx, r.cfg.Clients)
	if err != nil {
		return nil, err
	}
	defer closeConns(conns)
	b := r.account(w.name + "-b")
	if _, err := r.admin.Exec(ctx, `SELECT lease.set_limit($1, '', $2)`, b, r.cfg.Clients); err != nil {
		return nil, fmt.Errorf("set B's limit: %w", err)
	}
	r.checkpoint(ctx)
	idle, window, err := r.cyclesOf(ctx, conns, b)
	if err != nil {
		return nil, err
	}
	if err := r.fairBacklog(ctx, r.account(w.name+"-a")); err != nil {
		return nil, err
	}
	// The backlog's rows are vacuumed and analysed now, so that autovacuum
	// does not land in B's measurement: that would be the backlog's writes,
	// not its presence.
	if _, err := r.admin.Exec(ctx, `VACUUM (ANALYZE) lease.session_lease, lease.queue_ticket, lease.limit_slot`); err != nil {
		return nil, fmt.Errorf("vacuum after A's backlog: %w", err)
	}
	r.checkpoint(ctx)
	busy, busyWindow, err := r.cyclesOf(ctx, conns, b)
	if err != nil {
		return nil, err
	}
	idleRes := newResult(w.name+"-idle", fmt.Sprintf(fairIdleDesc, r.cfg.Clients, r.cfg.Clients), idle, window)
	busyRes := newResult(w.name+"-backlog", fmt.Sprintf(fairBusyDesc, fairBacklog, fairBacklog), busy, busyWindow)
	busyRes.Note = fmt.Sprintf("p50 %.2fx, p99 %.2fx the idle row's", busyRes.P50ms/idleRes.P50ms, busyRes.P99ms/idleRes.P99ms)
	return []Result{idleRes, busyRes}, nil
}

// fairBacklog gives account a fairBacklog live runs (acquired before its
// limit of 1, which revokes none of them), each session with a queued
// ticket of another run.
func (r *run) fairBacklog(ctx context.Context, a string) error {
	for _, q := range []string{
		`SELECT count(*) FROM generate_series(1, $2) g, lease.acquire($1, 's' || g, gen_random_uuid(), '1 hour', 'backlog')`,
		`SELECT lease.set_limit($1, '', 1), $2::integer`,
		`SELECT count(*) FROM generate_series(1, $2) g, lease.enqueue($1, 's' || g, gen_random_uuid(), '1 hour', 'queued')`,
	} {
		if _, err := r.admin.Exec(ctx, q, a, fairBacklog); err != nil {
			return fmt.Errorf("account A's backlog: %w", err)
		}
	}
	return nil
}

// cyclesOf runs acquire+release cycles of account's sessions (one per
// client) for the warm-up and the measured window, and returns the
// acquires' latency in the window.
func (r *run) cyclesOf(ctx context.Context, conns []*pgx.Conn, account string) (*Histogram, time.Duration, error) {
	var recording atomic.Bool
	var mu sync.Mutex
	h := &Histogram{}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var stop atomic.Bool // not ctx: a cancelled query closes its connection, which the next phase uses
	var wg sync.WaitGroup
	for i, conn := range conns {
		key := data.Key{Account: account, Session: fmt.Sprintf("s%03d", i)}
		wg.Go(func() {
			for !stop.Load() && ctx.Err() == nil {
				run := uuid.New()
				t0 := time.Now()
				ok, err := r.libAcquire(ctx, conn, key, run, time.Minute)
				d := time.Since(t0)
				if err == nil && !ok {
					err = fmt.Errorf("acquire %s: refused, want granted", key)
				}
				if err == nil {
					err = r.libRelease(ctx, conn, key, run)
				}
				if err != nil {
					if ctx.Err() == nil {
						cancel(err)
					}
					return
				}
				if recording.Load() {
					mu.Lock()
					h.Record(d)
					mu.Unlock()
				}
			}
		})
	}
	sleepCtx(ctx, r.cfg.Warmup)
	recording.Store(true)
	start := time.Now()
	sleepCtx(ctx, r.cfg.Duration)
	recording.Store(false)
	window := time.Since(start)
	stop.Store(true)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, 0, err
	}
	return h, window, nil
}
