package faults_test

import (
	"context"
	"sync"
	"time"

	"github.com/leasetop/leasetop/data"
	"github.com/leasetop/leasetop/monitor"
)

// view is what the checks need of a monitor model: monitor.Mirror and probe
// both have it.
type view interface {
	Read(fn func(s *monitor.State))
	WaitFor(ctx context.Context, cond func(s *monitor.State) bool) error
}

// probe is monitor.Mirror with counters, and a consumer that can stop
// taking batches: it runs a monitor.Feed into a monitor.State like the
// terminal does, counts what the batches carried, and while paused takes
// nothing at all (harsher than the terminal's pause, which only freezes the
// screen), so the Feed must keep reading and bound what it holds.
type probe struct {
	feed *monitor.Feed

	mu        sync.Mutex
	state     *monitor.State
	changed   chan struct{} // closed and replaced after every applied batch
	resume    chan struct{} // nil when not paused; closed by unpause
	syncs     int           // resyncs applied
	notified  int           // notifications applied (events and renewals)
	dropped   int64         // the listener's dropped count in the last batch
	bigBatch  int           // most items in one batch
	firstSync bool          // the first batch after a pause began with a resync
	afterStop bool          // the next batch is the first after a pause
}

// startProbe runs a probe of store until the test ends.
func (r *rig) startProbe(store *data.Store, cfg monitor.FeedConfig) *probe {
	r.t.Helper()
	p := &probe{feed: monitor.NewFeed(store, cfg), state: monitor.NewState(monitor.Config{}), changed: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = p.feed.Run(ctx) })
	wg.Go(func() { p.consume(ctx) })
	r.t.Cleanup(func() { cancel(); wg.Wait() })
	waitMirror(r.t, p, 30*time.Second, "the probe to be LIVE", func(s *monitor.State) bool { return s.Synced() && live(s) })
	return p
}

// consume takes and applies batches until the feed stops, waiting while
// paused.
func (p *probe) consume(ctx context.Context) {
	for {
		p.mu.Lock()
		resume := p.resume
		p.mu.Unlock()
		if resume != nil {
			select {
			case <-resume:
			case <-ctx.Done():
				return
			}
		}
		b, ok := p.feed.Next()
		if !ok {
			return
		}
		p.apply(b)
	}
}

func (p *probe) apply(b monitor.Batch) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, it := range b.Items {
		switch {
		case it.Sync != nil:
			p.syncs++
		case it.Event != nil:
			p.notified++
		}
	}
	if p.afterStop {
		p.firstSync = len(b.Items) > 0 && b.Items[0].Sync != nil
		p.afterStop = false
	}
	p.dropped = b.Dropped
	p.bigBatch = max(p.bigBatch, len(b.Items))
	p.state.Apply(b, time.Now())
	close(p.changed)
	p.changed = make(chan struct{})
}

// pause stops taking batches (after the one being applied, if any).
func (p *probe) pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.resume == nil {
		p.resume = make(chan struct{})
	}
}

// unpause takes batches again.
func (p *probe) unpause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.resume != nil {
		close(p.resume)
		p.resume = nil
		p.afterStop = true
	}
}

// Read calls fn with the state under the probe's lock.
func (p *probe) Read(fn func(s *monitor.State)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fn(p.state)
}

// probeCounts is what the batches a probe applied carried.
type probeCounts struct {
	syncs, notified int   // resyncs and notifications applied
	dropped         int64 // the listener's dropped count in the last batch
	bigBatch        int   // most items in one batch
	firstSync       bool  // the first batch after the last pause began with a resync
}

// counts returns what the batches carried so far.
func (p *probe) counts() probeCounts {
	p.mu.Lock()
	defer p.mu.Unlock()
	return probeCounts{syncs: p.syncs, notified: p.notified, dropped: p.dropped, bigBatch: p.bigBatch, firstSync: p.firstSync}
}

// WaitFor waits until cond holds after a batch (checked at least every 50
// ms) or ctx ends.
func (p *probe) WaitFor(ctx context.Context, cond func(s *monitor.State) bool) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		p.mu.Lock()
		ok, changed := cond(p.state), p.changed
		p.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		case <-tick.C:
		}
	}
}
