package exporter

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/leasetop/leasetop/internal/data"
)

// queueUsage is the Collector of leasetop_notify_queue_usage_ratio, read
// from the database when Prometheus scrapes. When the read fails the gauge
// is left out of that scrape (the feed's metrics say why).
type queueUsage struct {
	usage scrapeRead[float64]
	desc  *prometheus.Desc
}

func newQueueUsage(store func() *data.Store) *queueUsage {
	return &queueUsage{usage: scrapeRead[float64]{store: store, read: (*data.Store).NotifyQueueUsage}, desc: prometheus.NewDesc("leasetop_notify_queue_usage_ratio",
		"pg_notification_queue_usage(): the fraction of PostgreSQL's NOTIFY queue in use. At 1 every transaction that notifies fails at its commit.", nil, nil)}
}

// Describe sends the descriptor.
func (q *queueUsage) Describe(ch chan<- *prometheus.Desc) { ch <- q.desc }

// Collect sends the usage, read now unless read within the last second.
func (q *queueUsage) Collect(ch chan<- prometheus.Metric) {
	if u, ok := q.usage.get(); ok {
		ch <- prometheus.MustNewConstMetric(q.desc, prometheus.GaugeValue, u)
	}
}
