package exporter

import (
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// kinds are the transition kinds leasetop_transitions_total counts (every
// kind of event row), each exported from the start at 0 so that rate() and
// increase() see the first one.
var kinds = data.Kinds()

// metrics are the counters and histograms updated as events are applied.
type metrics struct {
	transitions   *prometheus.CounterVec
	resyncs       prometheus.Counter
	gaps          prometheus.Counter
	takeoverDelay prometheus.Histogram
	holdTime      prometheus.Histogram
	lag           prometheus.Histogram
	queueWaits    *queueWaits            // queues.go
	inboxDelivery *inboxDeliveries       // inbox.go
	askOutcomes   *prometheus.CounterVec // handover.go
}

func newMetrics() metrics {
	m := metrics{
		queueWaits:    newQueueWaits(),
		inboxDelivery: newInboxDeliveries(),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "leasetop_transitions_total",
			Help: "Ownership transitions (rows of lease.event) by kind, each counted once when the exporter first applies it; the history before the exporter's first sync is not counted.",
		}, []string{"kind"}),
		resyncs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "leasetop_resyncs_total",
			Help: "Reads of every lease and the recent events: one at start, one after every reconnection, dropped notification or TRUNCATE.",
		}),
		gaps: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "leasetop_resync_gaps_total",
			Help: "Resyncs that missed more events than they could read: some transitions were not counted.",
		}),
		takeoverDelay: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "leasetop_takeover_delay_seconds",
			Help:    "For each taken_over event: how long after the previous lease expired the new run took it over (server clock).",
			Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600},
		}),
		holdTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "leasetop_hold_seconds",
			Help:    "For each released or force_released event: how long the run had held the lease (server clock).",
			Buckets: []float64{0.1, 0.5, 1, 5, 15, 30, 60, 300, 900, 1800, 3600, 4 * 3600, 24 * 3600},
		}),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "leasetop_event_lag_seconds",
			Help:    "From an event's time (taken in the writing transaction, just before it commits) to the exporter applying it, on the server clock.",
			Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		}),
	}
	for _, k := range kinds {
		m.transitions.WithLabelValues(string(k))
	}
	m.askOutcomes = newAskOutcomes()
	return m
}

// observe counts one event applied for the first time at server time
// serverNow. starts holds when the runs that released in this item had
// acquired their leases.
func (m metrics) observe(ev data.Event, serverNow time.Time, starts map[uuid.UUID]time.Time) {
	if !slices.Contains(kinds, ev.Kind) {
		return
	}
	m.transitions.WithLabelValues(string(ev.Kind)).Inc()
	m.observeAsk(ev.Kind)
	m.lag.Observe(seconds(serverNow.Sub(ev.At)))
	m.queueWaits.observe(ev)
	m.inboxDelivery.observe(ev)
	switch {
	case ev.Kind == data.KindTakenOver && !ev.PrevExpiresAt.IsZero():
		m.takeoverDelay.Observe(seconds(ev.At.Sub(ev.PrevExpiresAt)))
	case ev.Kind.Ends():
		if t, ok := starts[ev.RunID]; ok {
			m.holdTime.Observe(seconds(ev.At.Sub(t)))
		}
	}
}

// seconds is d in seconds, never negative: the server clock measurement has
// an uncertainty, and a lag cannot be.
func seconds(d time.Duration) float64 { return max(d, 0).Seconds() }

// runStarts returns when each run that an item releases had acquired its
// lease: from an acquire earlier in the same item, else from the lease the
// state shows before the item is applied. It returns nil when the item
// releases nothing it can date.
func (p *part) runStarts(it monitor.Item) map[uuid.UUID]time.Time {
	var evs []data.Event
	switch {
	case it.Event != nil:
		evs = []data.Event{*it.Event}
	case it.Sync != nil:
		evs = it.Sync.Events
	}
	var starts map[uuid.UUID]time.Time
	put := func(run uuid.UUID, at time.Time) {
		if starts == nil {
			starts = make(map[uuid.UUID]time.Time)
		}
		starts[run] = at
	}
	for i, ev := range evs {
		switch {
		case ev.Kind.Grants():
			if i < len(evs)-1 { // a later event of this item may release it
				put(ev.RunID, ev.At)
			}
		case ev.Kind.Ends():
			if _, ok := starts[ev.RunID]; ok {
				continue
			}
			if l, ok := p.state.Lease(ev.Key); ok && l.RunID == ev.RunID {
				put(ev.RunID, l.AcquiredAt)
			}
		}
	}
	return starts
}
