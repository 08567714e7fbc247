package exporter

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/leasetop/leasetop/internal/data"
)

// queueGauges is the Collector of the sessions' queues, read
// from the database when Prometheus scrapes, at most once a second and for
// at most two seconds, as queueUsage is: a ticket that expires writes no
// event, so the queues cannot be followed from the events. When the read
// fails the gauges are left out of that scrape.
type queueGauges struct {
	stats                               scrapeRead[data.QueueStats]
	tickets, sessions, longest, waiting *prometheus.Desc
}

func newQueueGauges(store func() *data.Store) *queueGauges {
	return &queueGauges{stats: scrapeRead[data.QueueStats]{store: store, read: (*data.Store).QueueStats},
		tickets: prometheus.NewDesc("leasetop_queue_tickets",
			"Live tickets in every session's queue (waiters queued for a lease, leasetop run --on-busy queue, lease.Client.Queue).", nil, nil),
		sessions: prometheus.NewDesc("leasetop_queue_sessions",
			"Sessions whose queue holds a live ticket: their free lease is reserved for the queue's head.", nil, nil),
		longest: prometheus.NewDesc("leasetop_queue_longest",
			"The longest session queue, in live tickets (a queue refuses tickets past 64).", nil, nil),
		waiting: prometheus.NewDesc("leasetop_queue_oldest_wait_seconds",
			"How long the longest-waiting live ticket has waited, on the server clock (0 when no session has a queue).", nil, nil),
	}
}

// Describe sends the descriptors.
func (q *queueGauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- q.tickets
	ch <- q.sessions
	ch <- q.longest
	ch <- q.waiting
}

// Collect sends the gauges, read now unless read within the last second.
func (q *queueGauges) Collect(ch chan<- prometheus.Metric) {
	st, ok := q.stats.get()
	if !ok {
		return
	}
	ch <- prometheus.MustNewConstMetric(q.tickets, prometheus.GaugeValue, float64(st.Tickets))
	ch <- prometheus.MustNewConstMetric(q.sessions, prometheus.GaugeValue, float64(st.Sessions))
	ch <- prometheus.MustNewConstMetric(q.longest, prometheus.GaugeValue, float64(st.Longest))
	ch <- prometheus.MustNewConstMetric(q.waiting, prometheus.GaugeValue, st.OldestWait.Seconds())
}

// queueWaits measures leasetop_queue_wait_seconds: from a ticket's
// queue_joined event to its queue_left event with reason granted. The
// joins seen are kept until their ticket leaves, at most maxQueueJoins
// (tickets joined before the exporter started are not measured).
type queueWaits struct {
	hist   prometheus.Histogram
	joined map[queueTicketID]time.Time
}

type queueTicketID struct {
	key data.Key
	run [16]byte
}

const maxQueueJoins = 100000

func newQueueWaits() *queueWaits {
	return &queueWaits{
		hist: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "leasetop_queue_wait_seconds",
			Help:    "For each queued waiter granted the lease: how long it waited in the queue, from queue_joined to queue_left (granted), on the server clock.",
			Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600},
		}),
		joined: map[queueTicketID]time.Time{},
	}
}

// observe follows one event applied for the first time.
func (w *queueWaits) observe(ev data.Event) {
	id := queueTicketID{key: ev.Key, run: ev.RunID}
	switch ev.Kind {
	case data.KindQueueJoined:
		if len(w.joined) < maxQueueJoins {
			w.joined[id] = ev.At
		}
	case data.KindQueueLeft:
		if at, ok := w.joined[id]; ok {
			delete(w.joined, id)
			if ev.Reason == "granted" {
				w.hist.Observe(seconds(ev.At.Sub(at)))
			}
		}
	}
}
