package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
)

// A closed-loop workload: Clients goroutines, each with its own connection and
// its own share of the keys, each running op back to back. Ops that start
// during the warm-up are not recorded; ops that start in the measured window
// are, and throughput is their count over the window.
type loop struct {
	tag string // account id suffix of the keys (defaults to the workload name)
	// setup prepares a client before the warm-up (e.g. acquires its keys).
	setup func(ctx context.Context, c *client) error
	// op is one operation. It may time parts of itself with c.time.
	op func(ctx context.Context, c *client) error
	// rows names, in order, the results this loop reports: "" is the whole op,
	// anything else a part timed with c.time.
	rows []row
}

// row is one reported line of a workload.
type row struct {
	part string // "" for the whole op
	name string
	desc string
}

// client is one closed-loop client.
type client struct {
	id    int
	conn  *pgx.Conn
	keys  []data.Key
	runs  []uuid.UUID // per key, for workloads that hold their keys
	next  int
	hists map[string]*Histogram

	recording bool // the current op started inside the measured window
}

// nextKey returns the index and key of the client's next key, round robin.
func (c *client) nextKey() (int, data.Key) {
	i := c.next
	c.next = (c.next + 1) % len(c.keys)
	return i, c.keys[i]
}

// time runs fn and, when the current op is recorded, records its latency as
// part name.
func (c *client) time(part string, fn func() error) error {
	t0 := time.Now()
	err := fn()
	if err == nil && c.recording {
		c.hist(part).Record(time.Since(t0))
	}
	return err
}

func (c *client) hist(part string) *Histogram {
	h, ok := c.hists[part]
	if !ok {
		h = &Histogram{}
		c.hists[part] = h
	}
	return h
}

// Phases of a closed-loop run.
const (
	phaseWarmup int32 = iota
	phaseMeasure
	phaseDone
)

// runLoop runs l as workload w on its own and returns one Result per row.
func (r *run) runLoop(ctx context.Context, w workload, l loop) ([]Result, error) {
	m := &member{w: w, l: l}
	r.runSet(ctx, []*member{m})
	return m.results, m.err
}

// member is one closed-loop workload of an interleaved set.
type member struct {
	w       workload
	l       loop
	clients []*client
	window  time.Duration // measured so far
	results []Result
	err     error
	// serverCPU is the CPU time the clients' server processes spent in the
	// measured slices, while cpuOK (every slice read it from /proc).
	serverCPU time.Duration
	cpuOK     bool
}

// runSet runs closed-loop workloads interleaved. Every member is set up and
// warmed up; then they take turns, in slices of at most a second, until each
// has been measured for Duration. Workloads measured in alternating slices
// see the same machine: a ratio between them survives the load of other
// processes drifting during the run, which back-to-back runs do not. The
// members share one connection per client (never used by two at once).
func (r *run) runSet(ctx context.Context, ms []*member) {
	conns, err := r.openConns(ctx, r.cfg.Clients)
	if err != nil {
		for _, m := range ms {
			m.err = err
		}
		return
	}
	defer closeConns(conns)
	for _, m := range ms {
		r.prepare(ctx, m, conns)
	}
	r.interleave(ctx, ms)
}

// interleave warms up and measures prepared members in turns (see runSet).
func (r *run) interleave(ctx context.Context, ms []*member) {
	r.checkpoint(ctx)
	for _, m := range ms {
		if m.err == nil {
			_, m.err = runSlice(ctx, m, r.cfg.Warmup, false)
		}
	}
	slice := min(r.cfg.Duration, time.Second)
	for more := true; more && ctx.Err() == nil; {
		more = false
		for _, m := range ms {
			if m.err != nil || m.window >= r.cfg.Duration {
				continue
			}
			cpu0, err0 := clientsCPU(m.clients)
			d, err := runSlice(ctx, m, min(slice, r.cfg.Duration-m.window), true)
			cpu1, err1 := clientsCPU(m.clients)
			m.cpuOK = err0 == nil && err1 == nil && (m.cpuOK || m.window == 0)
			m.serverCPU += cpu1 - cpu0
			m.window += d
			m.err = err
			more = more || m.window < r.cfg.Duration
		}
	}
	for _, m := range ms {
		if m.err == nil && ctx.Err() != nil {
			m.err = ctx.Err()
		}
		if m.err == nil {
			m.results = r.loopResults(m.clients, m.l.rows, m.window)
			for i, rw := range m.l.rows {
				if res := &m.results[i]; rw.part == "" && m.cpuOK && res.Ops > 0 {
					res.ServerCPUus = float64(m.serverCPU.Microseconds()) / float64(res.Ops)
					res.Note = fmt.Sprintf("server CPU %.0f us", res.ServerCPUus)
				}
			}
		}
	}
}

// clientsCPU is the CPU time the clients' server processes have used so
// far: backendCPU of each connection's backend, so only when the server runs
// on this machine (an error otherwise).
func clientsCPU(clients []*client) (time.Duration, error) {
	var sum time.Duration
	for _, c := range clients {
		d, err := backendCPU(c.conn.PgConn().PID())
		if err != nil {
			return 0, err
		}
		sum += d
	}
	return sum, nil
}

// prepare gives m its clients (on conns) and runs its setup.
func (r *run) prepare(ctx context.Context, m *member, conns []*pgx.Conn) {
	tag := m.l.tag
	if tag == "" {
		tag = m.w.name
	}
	keys := r.keys(tag, r.cfg.Keys)
	n := len(conns)
	for i, conn := range conns {
		lo, hi := i*len(keys)/n, (i+1)*len(keys)/n
		m.clients = append(m.clients, &client{
			id: i, conn: conn, keys: keys[lo:hi], runs: make([]uuid.UUID, hi-lo), hists: map[string]*Histogram{},
		})
	}
	if m.l.setup != nil {
		if err := eachClient(ctx, m.clients, m.l.setup); err != nil {
			m.err = fmt.Errorf("set up: %w", err)
		}
	}
}

// runSlice runs m's clients for d, recording or not, and returns how long
// the slice lasted. Ops that start in the slice are recorded.
func runSlice(ctx context.Context, m *member, d time.Duration, record bool) (time.Duration, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var stop atomic.Bool
	var wg sync.WaitGroup
	for _, c := range m.clients {
		c.recording = record
		wg.Go(func() {
			for !stop.Load() && ctx.Err() == nil {
				t0 := time.Now()
				if err := m.l.op(ctx, c); err != nil {
					if ctx.Err() == nil {
						cancel(fmt.Errorf("client %d: %w", c.id, err))
					}
					return
				}
				if record {
					c.hist("").Record(time.Since(t0))
				}
			}
		})
	}
	start := time.Now()
	sleepCtx(ctx, d)
	stop.Store(true)
	elapsed := time.Since(start)
	wg.Wait()
	return elapsed, context.Cause(ctx)
}

// measure runs the warm-up and the measured window, switching phase, and
// returns the window's length (shorter if ctx ends it early).
func (r *run) measure(ctx context.Context, phase *atomic.Int32) time.Duration {
	return r.measureWindow(ctx, phase, func(time.Time, time.Time) {})
}

// measureWindow is measure that also reports when the window opens and
// closes (a zero time for the side not yet known).
func (r *run) measureWindow(ctx context.Context, phase *atomic.Int32, mark func(from, to time.Time)) time.Duration {
	defer phase.Store(phaseDone)
	if !sleepCtx(ctx, r.cfg.Warmup) {
		return 0
	}
	start := time.Now()
	mark(start, time.Time{})
	phase.Store(phaseMeasure)
	sleepCtx(ctx, r.cfg.Duration)
	end := time.Now()
	mark(time.Time{}, end)
	phase.Store(phaseDone)
	return end.Sub(start)
}

func (r *run) loopResults(clients []*client, rows []row, window time.Duration) []Result {
	var out []Result
	for _, rw := range rows {
		var h Histogram
		for _, c := range clients {
			if ch, ok := c.hists[rw.part]; ok {
				h.Merge(ch)
			}
		}
		out = append(out, newResult(rw.name, rw.desc, &h, window))
	}
	return out
}

// eachClient runs fn for every client concurrently and returns the first
// error.
func eachClient(ctx context.Context, clients []*client, fn func(context.Context, *client) error) error {
	errs := make([]error, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() { errs[i] = fn(ctx, c) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// sleepCtx waits d or until ctx ends; it reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
