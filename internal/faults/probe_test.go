package faults_test

import (
	"sync"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/monitortest"
	"github.com/leasetop/leasetop/monitor"
)

// probe is a monitortest.Mirror that counts what the batches it applied
// carried, through the mirror's OnBatch hook. The fault tests pause it
// (Mirror.Pause: it takes nothing at all meanwhile), so the Feed must keep
// reading and bound what it holds.
type probe struct {
	*monitortest.Mirror

	mu        sync.Mutex
	counts    probeCounts
	afterStop bool // the next batch is the first after a pause
}

// probeCounts is what the batches a probe applied carried.
type probeCounts struct {
	syncs, notified int   // resyncs and notifications applied
	dropped         int64 // the listener's dropped count in the last batch
	bigBatch        int   // most items in one batch
	firstSync       bool  // the first batch after the last pause began with a resync
}

// startProbe runs a probe of store until the test ends, and waits until it
// is LIVE.
func (r *rig) startProbe(store *data.Store, cfg monitor.FeedConfig) *probe {
	r.t.Helper()
	p := &probe{Mirror: monitortest.NewMirror(store, cfg, monitor.Config{})}
	p.OnBatch(p.count)
	r.runMirror(p.Mirror, "the probe to be LIVE")
	return p
}

// count is the mirror's OnBatch hook.
func (p *probe) count(b monitor.Batch) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, it := range b.Items {
		switch {
		case it.Sync != nil:
			p.counts.syncs++
		case it.Event != nil:
			p.counts.notified++
		}
	}
	if p.afterStop {
		p.counts.firstSync = len(b.Items) > 0 && b.Items[0].Sync != nil
		p.afterStop = false
	}
	p.counts.dropped = b.Dropped
	p.counts.bigBatch = max(p.counts.bigBatch, len(b.Items))
}

// Resume takes batches again after Pause, noting that the next batch is
// the first after the pause.
func (p *probe) Resume() {
	p.mu.Lock()
	p.afterStop = true
	p.mu.Unlock()
	p.Mirror.Resume()
}

// carried returns what the batches carried so far.
func (p *probe) carried() probeCounts {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts
}
