package exporter

import (
	"cmp"
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// Config configures an Exporter. Zero fields take the documented defaults.
type Config struct {
	// ExpiringWithin: an unexpired lease with less than this left on the
	// server clock counts as expiring. Default 5 s.
	ExpiringWithin time.Duration
	// ByAccount adds an account label to the lease gauges, for the
	// MaxAccounts accounts with the most leases; the rest are
	// account="other".
	ByAccount bool
	// MaxAccounts caps the accounts with their own series. Default 50.
	MaxAccounts int
	// Feed configures the monitor feed the exporter runs on.
	Feed monitor.FeedConfig
	// OnLink, when set, is called from Run's goroutine each time the feed's
	// link (live, reconnecting, down, as the monitor's header shows it)
	// changes, for a log line; not for the stop that cancelling Run's
	// context makes.
	OnLink func(monitor.Health)
}

// Defaults of Config.
const (
	DefaultExpiringWithin = 5 * time.Second
	DefaultMaxAccounts    = 50
)

func (c Config) withDefaults() Config {
	c.ExpiringWithin = cmp.Or(c.ExpiringWithin, DefaultExpiringWithin)
	c.MaxAccounts = cmp.Or(c.MaxAccounts, DefaultMaxAccounts)
	return c
}

// Exporter keeps a monitor.State true through a monitor.Feed and exports it
// as Prometheus metrics on a private registry. Run it with Run; serve it
// with Handler. It is safe for concurrent use.
type Exporter struct {
	cfg      Config
	feed     *monitor.Feed
	registry *prometheus.Registry
	m        metrics
	started  time.Time
	ready    atomic.Bool // the first resync has been applied

	mu      sync.Mutex // guards state and dropped; held by apply and by a scrape
	state   *monitor.State
	dropped int64 // the listener's dropped notifications, from the last batch

	link monitor.Link // the link last reported to OnLink; Run's goroutine only
}

// New returns an exporter of store's database. Start it with Run.
func New(store *data.Store, cfg Config) *Exporter {
	cfg = cfg.withDefaults()
	e := &Exporter{
		cfg:      cfg,
		feed:     monitor.NewFeed(store, cfg.Feed),
		registry: prometheus.NewRegistry(),
		m:        newMetrics(),
		started:  time.Now(),
		// The exporter shows no event list: one kept event is enough.
		// De-duplication does not depend on it (State keeps every id seen).
		state: monitor.NewState(monitor.Config{EventLimit: 1}),
		link:  monitor.LinkConnecting,
	}
	e.registry.MustRegister(
		e.m.transitions, e.m.resyncs, e.m.gaps,
		e.m.takeoverDelay, e.m.holdTime, e.m.lag, e.m.queueWaits.hist, newQueueGauges(store),
		e.m.inboxDelivery.hist, newInboxGauges(store),
		e.m.askOutcomes,
		&gauges{e: e, d: newGaugeDescs(cfg.ByAccount)},
		newPollReasonGauge(e),
		newQueueUsage(store),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return e
}

// Ready reports whether the first resync has been applied: before it the
// gauges describe nothing.
func (e *Exporter) Ready() bool { return e.ready.Load() }

// Run runs the feed and applies what it delivers until ctx is cancelled; it
// returns when the feed has stopped. An Exporter runs once.
func (e *Exporter) Run(ctx context.Context) error {
	stop := e.feed.Start(ctx)
	defer stop()
	for {
		b, ok := e.feed.Next()
		if !ok {
			return nil
		}
		now := time.Now()
		h := e.apply(b, now)
		if resynced(b) {
			monitor.FreeAfterResync(e.leases())
		}
		// Once ctx ends the feed reports itself stopped, which reads as
		// down: that is this stop, not a link to report.
		if h.Link != e.link && e.cfg.OnLink != nil && ctx.Err() == nil {
			e.cfg.OnLink(h)
		}
		e.link = h.Link
	}
}

// apply applies a batch taken from the feed at local time now, one item at
// a time, so that each item's new events are known, and counted, with the
// state as it was just before them. It returns the feed's health after it.
func (e *Exporter) apply(b monitor.Batch, now time.Time) monitor.Health {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.dropped = b.Dropped
	if len(b.Items) == 0 {
		e.state.Apply(b, now) // connection state and counters only
	}
	one := b
	for i := range b.Items {
		one.Items = b.Items[i : i+1]
		e.applyItem(one, now)
	}
	if e.state.Synced() {
		e.ready.Store(true)
	}
	return e.state.Health(now)
}

// applyItem applies a batch of one item and counts the events the state had
// not seen. The first resync's events are the past: applied, not counted.
func (e *Exporter) applyItem(one monitor.Batch, now time.Time) {
	it := one.Items[0]
	history := it.Sync != nil && !e.state.Synced()
	starts := e.runStarts(it)
	fresh := e.state.Apply(one, now)
	if it.Sync != nil {
		e.m.resyncs.Inc()
		if it.Sync.Truncated && !history {
			e.m.gaps.Inc()
		}
	}
	if history {
		return
	}
	serverNow := e.state.ServerNow(now)
	for _, ev := range fresh {
		e.m.observe(ev, serverNow, starts)
	}
}

// resynced reports whether b holds a resync.
func resynced(b monitor.Batch) bool {
	for _, it := range b.Items {
		if it.Sync != nil {
			return true
		}
	}
	return false
}

// leases is how many leases the state holds.
func (e *Exporter) leases() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.state.Len()
}
