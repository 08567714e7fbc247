package exporter

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/leasetop/leasetop/internal/data"
)

// askOutcomeOf is the outcome label of an event that ends an ask to hand
// over.
var askOutcomeOf = map[data.Kind]string{
	data.KindHandedOver:       "handed_over",
	data.KindHandoverDeclined: "declined",
	data.KindHandoverExpired:  "expired",
}

// newAskOutcomes is leasetop_handover_asks_total, each outcome exported
// from the start at 0.
func newAskOutcomes() *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "leasetop_handover_asks_total",
		Help: "Asks to hand a lease over, by how they ended: handed_over, declined or expired (unanswered by the deadline, withdrawn by the asker, or the lease changed hands first).",
	}, []string{"outcome"})
	for _, o := range askOutcomeOf {
		c.WithLabelValues(o)
	}
	return c
}

// observeAsk counts an event that ends an ask.
func (m metrics) observeAsk(k data.Kind) {
	if o, ok := askOutcomeOf[k]; ok {
		m.askOutcomes.WithLabelValues(o).Inc()
	}
}
