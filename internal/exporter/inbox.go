package exporter

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/leasetop/leasetop/internal/data"
)

// inboxGauges is the Collector of the conversations' inboxes,
// read from the database when Prometheus scrapes, at most once a second
// and for at most two seconds, as queueGauges is: a message that expires
// writes its event only when next observed, so the inboxes cannot be
// followed from the events. When the read fails the gauges are left out of
// that scrape.
type inboxGauges struct {
	stats                                    scrapeRead[data.InboxStats]
	messages, undelivered, sessions, waiting *prometheus.Desc
}

func newInboxGauges(store func() *data.Store) *inboxGauges {
	return &inboxGauges{stats: scrapeRead[data.InboxStats]{store: store, read: (*data.Store).InboxStats},
		messages: prometheus.NewDesc("leasetop_inbox_messages",
			"Live messages in every conversation's inbox (steers and cancels sent, neither acknowledged nor expired: leasetop send, lease.Client.Send).", nil, nil),
		undelivered: prometheus.NewDesc("leasetop_inbox_undelivered",
			"Live messages no run has received yet (nobody holds their conversation, or its holder does not read its messages).", nil, nil),
		sessions: prometheus.NewDesc("leasetop_inbox_sessions",
			"Conversations whose inbox holds a live message.", nil, nil),
		waiting: prometheus.NewDesc("leasetop_inbox_oldest_wait_seconds",
			"How long the oldest live message has waited to be acknowledged, on the server clock (0 when none waits).", nil, nil),
	}
}

// Describe sends the descriptors.
func (g *inboxGauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- g.messages
	ch <- g.undelivered
	ch <- g.sessions
	ch <- g.waiting
}

// Collect sends the gauges, read now unless read within the last second.
func (g *inboxGauges) Collect(ch chan<- prometheus.Metric) {
	st, ok := g.stats.get()
	if !ok {
		return
	}
	ch <- prometheus.MustNewConstMetric(g.messages, prometheus.GaugeValue, float64(st.Messages))
	ch <- prometheus.MustNewConstMetric(g.undelivered, prometheus.GaugeValue, float64(st.Undelivered))
	ch <- prometheus.MustNewConstMetric(g.sessions, prometheus.GaugeValue, float64(st.Sessions))
	ch <- prometheus.MustNewConstMetric(g.waiting, prometheus.GaugeValue, st.Oldest.Seconds())
}

// inboxDeliveries measures leasetop_inbox_delivery_seconds: from a
// message's message_sent event to its first delivery to a run
// (message_delivered; message_carried when the run it was delivered to
// first is one the exporter never saw). The sends seen are kept until
// their message is delivered or ends, at most maxInboxSends (messages sent
// before the exporter started are not measured).
type inboxDeliveries struct {
	hist prometheus.Histogram
	sent map[inboxMessageID]time.Time
}

type inboxMessageID struct {
	key data.Key
	id  int64
}

const maxInboxSends = 100000

func newInboxDeliveries() *inboxDeliveries {
	return &inboxDeliveries{
		hist: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "leasetop_inbox_delivery_seconds",
			Help:    "For each message delivered to a run: how long from its send to its first delivery (message_sent to message_delivered), on the server clock.",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900},
		}),
		sent: map[inboxMessageID]time.Time{},
	}
}

// observe follows one event applied for the first time.
func (d *inboxDeliveries) observe(ev data.Event) {
	id := inboxMessageID{key: ev.Key, id: ev.MessageID}
	switch ev.Kind {
	case data.KindMessageSent:
		if len(d.sent) < maxInboxSends {
			d.sent[id] = ev.At
		}
	case data.KindMessageDelivered, data.KindMessageCarried:
		if at, ok := d.sent[id]; ok {
			delete(d.sent, id)
			d.hist.Observe(seconds(ev.At.Sub(at)))
		}
	case data.KindMessageAcked, data.KindMessageExpired:
		delete(d.sent, id)
	}
}
