package exporter

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/leasetop/leasetop/internal/data"
)

// How queueUsage reads the database: at most once a second, however often
// /metrics is fetched, and for at most two seconds.
const (
	queueUsageMaxAge  = time.Second
	queueUsageTimeout = 2 * time.Second
)

// queueUsage is the Collector of leasetop_notify_queue_usage_ratio, read
// from the database when Prometheus scrapes. When the read fails the gauge
// is left out of that scrape (the feed's metrics say why).
type queueUsage struct {
	store func() *data.Store // nil until it opened
	desc  *prometheus.Desc

	mu   sync.Mutex // guards read and last; held while reading
	read time.Time  // when last was read
	last float64
}

func newQueueUsage(store func() *data.Store) *queueUsage {
	return &queueUsage{store: store, desc: prometheus.NewDesc("leasetop_notify_queue_usage_ratio",
		"pg_notification_queue_usage(): the fraction of PostgreSQL's NOTIFY queue in use. At 1 every transaction that notifies fails at its commit.", nil, nil)}
}

// Describe sends the descriptor.
func (q *queueUsage) Describe(ch chan<- *prometheus.Desc) { ch <- q.desc }

// Collect sends the usage, read now unless read within the last second.
func (q *queueUsage) Collect(ch chan<- prometheus.Metric) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if now := time.Now(); now.Sub(q.read) >= queueUsageMaxAge {
		store := q.store()
		if store == nil {
			return // not connected yet: the feed's metrics say so
		}
		ctx, cancel := context.WithTimeout(context.Background(), queueUsageTimeout)
		u, err := store.NotifyQueueUsage(ctx)
		cancel()
		if err != nil {
			return
		}
		q.read, q.last = now, u
	}
	ch <- prometheus.MustNewConstMetric(q.desc, prometheus.GaugeValue, q.last)
}
