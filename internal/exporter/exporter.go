package exporter

import (
	"cmp"
	"context"
	"slices"
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
	// MaxLimits caps the limits (an account's, or a pool's within it) with
	// series of their own in the limit gauges, the fullest first; the rest
	// are summed as account="other". Default 20.
	MaxLimits int
	// Feed configures the monitor feed the exporter runs on.
	Feed monitor.FeedConfig
	// OnLink, when set, is called from Run's goroutine each time a feed's
	// link (live, reconnecting, down, as the monitor's header shows it)
	// changes, with its context's name ("" for an exporter of one
	// database), for a log line; not for the stop that cancelling Run's
	// context makes.
	OnLink func(context string, h monitor.Health)
}

// Defaults of Config.
const (
	DefaultExpiringWithin = 5 * time.Second
	DefaultMaxAccounts    = 50
	DefaultMaxLimits      = 20
)

func (c Config) withDefaults() Config {
	c.ExpiringWithin = cmp.Or(c.ExpiringWithin, DefaultExpiringWithin)
	c.MaxAccounts = cmp.Or(c.MaxAccounts, DefaultMaxAccounts)
	c.MaxLimits = cmp.Or(c.MaxLimits, DefaultMaxLimits)
	return c
}

// Exporter keeps a monitor.State true through a monitor.Feed and exports it
// as Prometheus metrics on a private registry. Run it with Run; serve it
// with Handler. It is safe for concurrent use.
//
// An exporter of several databases (NewContexts) keeps a State of each
// through one monitor.Feeds, and every series of each carries its
// context's name as a context label; the process's own metrics (go_*,
// process_*) have none.
type Exporter struct {
	cfg      Config
	registry *prometheus.Registry
	started  time.Time
	parts    []*part
	feed     *monitor.Feed  // an exporter of one database
	feeds    *monitor.Feeds // of several
}

// part is what an exporter exports of one database.
type part struct {
	e     *Exporter
	name  string             // its context's name; "" for an exporter of one database
	store func() *data.Store // nil until it opened
	m     metrics
	ready atomic.Bool // the first resync has been applied

	mu      sync.Mutex // guards state and dropped; held by apply and by a scrape
	state   *monitor.State
	dropped int64 // the listener's dropped notifications, from the last batch

	link monitor.Link // the link last reported to OnLink; Run's goroutine only
}

// New returns an exporter of store's database. Start it with Run.
func New(store *data.Store, cfg Config) *Exporter {
	e := newExporter(cfg)
	e.feed = monitor.NewFeed(store, e.cfg.Feed)
	e.addPart("", func() *data.Store { return store }, e.registry)
	return e
}

// NewContexts returns an exporter of several databases, each opened (and
// retried while it is down) by its context's Open; Config.Feed is each one's
// feed's, unless the context sets its own. Every series of a context
// carries its name as the label context. Start it with Run.
func NewContexts(contexts []monitor.Context, cfg Config) *Exporter {
	e := newExporter(cfg)
	ctxs := slices.Clone(contexts)
	for i := range ctxs {
		if ctxs[i].Feed == (monitor.FeedConfig{}) {
			ctxs[i].Feed = e.cfg.Feed
		}
	}
	e.feeds = monitor.NewFeeds(ctxs)
	for i, c := range ctxs {
		e.addPart(c.Name, func() *data.Store { return e.feeds.Store(i) },
			prometheus.WrapRegistererWith(prometheus.Labels{"context": c.Name}, e.registry))
	}
	return e
}

func newExporter(cfg Config) *Exporter {
	e := &Exporter{cfg: cfg.withDefaults(), registry: prometheus.NewRegistry(), started: time.Now()}
	e.registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return e
}

// addPart adds the part of the database named name (its context's), whose
// metrics go to reg.
func (e *Exporter) addPart(name string, store func() *data.Store, reg prometheus.Registerer) {
	p := &part{
		e: e, name: name, store: store, m: newMetrics(),
		// The exporter shows no event list: one kept event is enough.
		// De-duplication does not depend on it (State keeps every id seen).
		state: monitor.NewState(monitor.Config{EventLimit: 1}),
		link:  monitor.LinkConnecting,
	}
	reg.MustRegister(
		p.m.transitions, p.m.resyncs, p.m.gaps,
		p.m.takeoverDelay, p.m.holdTime, p.m.lag, p.m.queueWaits.hist, newQueueGauges(store),
		p.m.inboxDelivery.hist, newInboxGauges(store),
		newLimitGauges(store, e.cfg.MaxLimits),
		p.m.askOutcomes,
		&gauges{p: p, d: newGaugeDescs(e.cfg.ByAccount)},
		newPollReasonGauge(p),
		newQueueUsage(store),
	)
	e.parts = append(e.parts, p)
}

// Ready reports whether the first resync of every database has been
// applied: before it the gauges describe nothing of it.
func (e *Exporter) Ready() bool {
	for _, p := range e.parts {
		if !p.ready.Load() {
			return false
		}
	}
	return true
}

// Run runs the feed and applies what it delivers until ctx is cancelled; it
// returns when the feed has stopped. An Exporter runs once.
func (e *Exporter) Run(ctx context.Context) error {
	next := e.feed.Next
	if e.feeds != nil {
		next = e.feeds.Next
		defer e.feeds.Start(ctx)()
	} else {
		defer e.feed.Start(ctx)()
	}
	for {
		b, ok := next()
		if !ok {
			return nil
		}
		p := e.parts[b.Context]
		h := p.apply(b, time.Now())
		if resynced(b) {
			monitor.FreeAfterResync(e.leases())
		}
		// Once ctx ends the feed reports itself stopped, which reads as
		// down: that is this stop, not a link to report.
		if h.Link != p.link && e.cfg.OnLink != nil && ctx.Err() == nil {
			e.cfg.OnLink(p.name, h)
		}
		p.link = h.Link
	}
}

// apply applies a batch of the first (or only) database; see part.apply.
func (e *Exporter) apply(b monitor.Batch, now time.Time) monitor.Health {
	return e.parts[b.Context].apply(b, now)
}

// apply applies a batch taken from the feed at local time now, one item at
// a time, so that each item's new events are known, and counted, with the
// state as it was just before them. It returns the feed's health after it.
func (p *part) apply(b monitor.Batch, now time.Time) monitor.Health {
	p.mu.Lock()
	defer p.mu.Unlock()
	b.Context = 0 // each part's State is of its database alone
	p.dropped = b.Dropped
	if len(b.Items) == 0 {
		p.state.Apply(b, now) // connection state and counters only
	}
	one := b
	for i := range b.Items {
		one.Items = b.Items[i : i+1]
		p.applyItem(one, now)
	}
	if p.state.Synced() {
		p.ready.Store(true)
	}
	return p.state.Health(now)
}

// applyItem applies a batch of one item and counts the events the state had
// not seen. The first resync's events are the past: applied, not counted.
func (p *part) applyItem(one monitor.Batch, now time.Time) {
	it := one.Items[0]
	history := it.Sync != nil && !p.state.Synced()
	starts := p.runStarts(it)
	fresh := p.state.Apply(one, now)
	if it.Sync != nil {
		p.m.resyncs.Inc()
		if it.Sync.Truncated && !history {
			p.m.gaps.Inc()
		}
	}
	if history {
		return
	}
	serverNow := p.state.ServerNow(now)
	for _, ev := range fresh {
		p.m.observe(ev, serverNow, starts)
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

// leases is how many leases the states hold.
func (e *Exporter) leases() int {
	n := 0
	for _, p := range e.parts {
		p.mu.Lock()
		n += p.state.Len()
		p.mu.Unlock()
	}
	return n
}
