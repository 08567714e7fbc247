package exporter

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/leasetop/leasetop/internal/data"
)

// pollReasons name, as leasetop_feed_poll_reason does, why a feed polls.
// "requested" (--poll) and "standby" were chosen and are healthy; the others
// mean that LISTEN should work there and does not.
var pollReasons = []struct {
	cause data.PollCause
	name  string
}{
	{data.PollRequested, "requested"},
	{data.PollStandby, "standby"},
	{data.PollPooler, "pooler"},
	{data.PollListenFailed, "listen_failed"},
	{data.PollNoDelivery, "no_delivery"},
}

// pollReasonGauge is the Collector of leasetop_feed_poll_reason: 1 for the
// reason the feed polls, 0 for the others; all 0 while it listens.
type pollReasonGauge struct {
	p    *part
	desc *prometheus.Desc
}

func newPollReasonGauge(p *part) *pollReasonGauge {
	return &pollReasonGauge{p: p, desc: prometheus.NewDesc("leasetop_feed_poll_reason",
		"Why the exporter's feed polls lease.event instead of listening: 1 for the reason, 0 for the others, all 0 while it listens. "+
			"requested (--poll) and standby were chosen; pooler (no --listen-dsn), listen_failed and no_delivery are LISTEN not working where it should.",
		[]string{"reason"}, nil)}
}

// Describe sends the descriptor.
func (g *pollReasonGauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

// Collect sends one series per reason.
func (g *pollReasonGauge) Collect(ch chan<- prometheus.Metric) {
	g.p.mu.Lock()
	cause := g.p.state.Health(time.Now()).PollReason.Cause
	g.p.mu.Unlock()
	for _, r := range pollReasons {
		v := 0.0
		if r.cause == cause {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, v, r.name)
	}
}
