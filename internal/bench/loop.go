package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/data"
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

// runLoop runs l as workload w and returns one Result per row.
func (r *run) runLoop(ctx context.Context, w workload, l loop) ([]Result, error) {
	tag := l.tag
	if tag == "" {
		tag = w.name
	}
	clients, err := r.openClients(ctx, r.keys(tag, r.cfg.Keys))
	defer closeClients(clients)
	if err != nil {
		return nil, err
	}
	if l.setup != nil {
		if err := eachClient(ctx, clients, l.setup); err != nil {
			return nil, fmt.Errorf("set up: %w", err)
		}
	}
	r.checkpoint(ctx)

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var phase atomic.Int32
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() {
			for phase.Load() != phaseDone && ctx.Err() == nil {
				c.recording = phase.Load() == phaseMeasure
				t0 := time.Now()
				if err := l.op(ctx, c); err != nil {
					if ctx.Err() == nil {
						cancel(fmt.Errorf("client %d: %w", c.id, err))
					}
					return
				}
				if c.recording {
					c.hist("").Record(time.Since(t0))
				}
			}
		})
	}
	window := r.measure(ctx, &phase)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	return r.loopResults(clients, l.rows, window), nil
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

// openClients opens one connection per client and deals out the keys: client
// i gets a contiguous share, so clients never share a key.
func (r *run) openClients(ctx context.Context, keys []data.Key) ([]*client, error) {
	n := r.cfg.Clients
	clients := make([]*client, 0, n)
	for i := range n {
		conn, err := r.connect(ctx)
		if err != nil {
			return clients, err
		}
		lo, hi := i*len(keys)/n, (i+1)*len(keys)/n
		clients = append(clients, &client{
			id: i, conn: conn, keys: keys[lo:hi], runs: make([]uuid.UUID, hi-lo),
			hists: map[string]*Histogram{},
		})
	}
	return clients, nil
}

func closeClients(clients []*client) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, c := range clients {
		_ = c.conn.Close(ctx)
	}
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
