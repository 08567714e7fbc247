package faults_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/demo/device"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/lease"
)

// crew is a set of in-process holders contending for the rig's sessions.
// Each holder has its own lease.Client on its own store (independent
// connections, possibly through a proxy) and writes through the fence check
// on a direct store of its own, like an application whose protected resource
// stays reachable when the lease database is not.
type crew struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
	done   func() // closes the clients and stores after the holders return
}

// crewConfig configures startCrew.
type crewConfig struct {
	holders int
	lease   lease.Config
	// leaseDSN returns holder i's database URL for the lease (default: the
	// rig's, direct).
	leaseDSN func(i int) string
	// hold is the longest a holder works on a session before it releases
	// it; each run works a random time between hold/5 and hold. Default
	// 500 ms.
	hold time.Duration
	// sticky is how many holders (the first ones) keep each lease they get
	// until they lose it or the crew stops.
	sticky int
	// name prefixes the holders' labels (name-0, name-1, ...), for a rig with
	// two crews. Default "holder".
	name string
}

// startCrew starts the holders; stop them with stop (also done when the test
// ends).
func (r *rig) startCrew(cfg crewConfig) *crew {
	r.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c := &crew{cancel: cancel}
	var closers []func()
	for i := range cfg.holders {
		dsn := r.url
		if cfg.leaseDSN != nil {
			dsn = cfg.leaseDSN(i)
		}
		leaseStore, err := data.Open(ctx, dsn)
		if err != nil {
			r.t.Fatalf("holder %d: data.Open: %v", i, err)
		}
		writes, err := data.Open(ctx, r.url)
		if err != nil {
			r.t.Fatalf("holder %d: data.Open: %v", i, err)
		}
		client, err := lease.New(leaseStore, cfg.lease)
		if err != nil {
			r.t.Fatalf("holder %d: lease.New: %v", i, err)
		}
		closers = append(closers, client.Close, leaseStore.Close, writes.Close)
		h := &holder{rig: r, name: fmt.Sprintf("%s-%d", cmp.Or(cfg.name, "holder"), i), client: client, writes: writes,
			hold: cmp.Or(cfg.hold, 500*time.Millisecond), sticky: i < cfg.sticky, rng: rand.New(rand.NewPCG(uint64(i), uint64(len(r.keys))))}
		c.wg.Go(func() { h.loop(ctx) })
	}
	c.done = func() {
		for _, f := range closers {
			f()
		}
	}
	r.t.Cleanup(c.stop)
	return c
}

// stop ends every holder (each releases what it holds) and waits for them.
func (c *crew) stop() {
	c.once.Do(func() {
		c.cancel()
		c.wg.Wait()
		c.done()
	})
}

// holder is one in-process holder.
type holder struct {
	rig    *rig
	name   string
	client *lease.Client
	writes *data.Store
	hold   time.Duration
	sticky bool // keep each lease until it is lost or ctx ends
	rng    *rand.Rand
}

// allow is the holders' Authorizer: the tests compete for their own
// sessions.
func allow(context.Context, lease.Request) error { return nil }

// loop waits for a random session, works on it for hold/5 to hold and
// releases it, until ctx ends.
func (h *holder) loop(ctx context.Context) {
	for ctx.Err() == nil {
		key := h.rig.keys[h.rng.IntN(len(h.rig.keys))]
		permit, err := h.client.Authorize(ctx, lease.AuthorizerFunc(allow), key, h.name)
		if err != nil {
			h.rig.t.Errorf("%s: Authorize: %v", h.name, err)
			return
		}
		wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		l, err := h.client.Wait(wctx, permit)
		cancel()
		if err != nil {
			// Held all along, or the database is unreachable: pace the retry.
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
			continue
		}
		h.rig.started(l)
		d := h.hold/5 + time.Duration(h.rng.Int64N(int64(h.hold*4/5)))
		if h.sticky {
			d = time.Hour
		}
		h.work(ctx, l, d)
		h.rig.stopped(l)
		_ = l.Release(context.Background()) // an unreachable database: it expires by itself
		h.rig.ended(l, errors.Is(l.Err(), lease.ErrLost))
	}
}

// work makes a fenced write every 10 ms for d, or until the lease is lost or
// ctx ends.
func (h *holder) work(ctx context.Context, l *lease.Lease, d time.Duration) {
	end := time.NewTimer(d)
	defer end.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for chunk := 1; ; chunk++ {
		select {
		case <-ctx.Done():
			return
		case <-l.Done():
			return
		case <-end.C:
			return
		case <-tick.C:
		}
		wctx, cancel := context.WithTimeout(l.Context(), 2*time.Second)
		if ok, err := device.WriteChunk(wctx, h.writes, l.Token(), h.name, chunk); ok && err == nil { // a refusal is recorded; an error wrote nothing
			h.rig.wrote(l.RunID())
		}
		cancel()
	}
}

// crewTTL is the holders' lease configuration: short, so that a fault of a
// few seconds ends leases and forces takeovers.
func crewTTL(ttl time.Duration) lease.Config {
	return lease.Config{TTL: ttl, PollInterval: 200 * time.Millisecond}
}

// waitRuns waits until the holders have started n more runs than before.
func (r *rig) waitRuns(t *testing.T, n int) {
	t.Helper()
	r.mu.Lock()
	want := len(r.rec.Started) + n
	r.mu.Unlock()
	pgtest.Eventually(t, 30*time.Second, fmt.Sprintf("%d runs to start", n), func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.rec.Started) >= want
	})
}

// holds reports whether the holder named name believes it holds a lease now.
func (r *rig) holds(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for run, s := range r.rec.Started {
		if _, ended := r.rec.Ended[run]; s.Holder == name && !ended {
			return true
		}
	}
	return false
}
