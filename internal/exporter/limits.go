package exporter

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/leasetop/leasetop/internal/data"
)

// limitGauges is the Collector of the accounts' limits (sql/limits.sql):
// for each limit (an account's own, pool "", or a pool's within it) its
// slots, the live runs holding them and the account's queued tickets, read
// from the database when Prometheus scrapes, at most once a second and for
// at most two seconds, as queueGauges is: a slot frees at its lease's
// expiry, which writes no event. The MaxLimits fullest limits
// (data.SortBySaturation) get series of their own, labelled account and
// pool; the rest are summed in one series, account="other" pool="", so the
// series stay bounded however many accounts have a limit. An account
// literally named "other" is summed there too. Without limits nothing is
// exported. When the read fails the gauges are left out of that scrape.
type limitGauges struct {
	use               scrapeRead[[]data.LimitUsage]
	max               int
	slots, used, qued *prometheus.Desc
}

func newLimitGauges(store func() *data.Store, maxLimits int) *limitGauges {
	labels := []string{"account", "pool"}
	return &limitGauges{
		use: scrapeRead[[]data.LimitUsage]{store: store, read: func(s *data.Store, ctx context.Context) ([]data.LimitUsage, error) {
			return s.Limits(ctx, "")
		}},
		max: maxLimits,
		slots: prometheus.NewDesc("leasetop_limit_slots",
			`The limit of live runs of an account (pool="") or of a pool within it (leasetop limit set): its slots.`, labels, nil),
		used: prometheus.NewDesc("leasetop_limit_slots_used",
			"The live runs holding a limit's slots (above leasetop_limit_slots while a lowered limit's runs finish).", labels, nil),
		qued: prometheus.NewDesc("leasetop_limit_queued",
			"Live queue tickets in the sessions of the limit's account (waiters for a session, which a full account also holds back).", labels, nil),
	}
}

// Describe sends the descriptors.
func (g *limitGauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- g.slots
	ch <- g.used
	ch <- g.qued
}

// Collect sends the gauges of the fullest limits and of the rest summed,
// read now unless read within the last second.
func (g *limitGauges) Collect(ch chan<- prometheus.Metric) {
	use, ok := g.use.get()
	if !ok || len(use) == 0 {
		return
	}
	top, other := topLimits(use, g.max)
	send := func(u data.LimitUsage) {
		ch <- prometheus.MustNewConstMetric(g.slots, prometheus.GaugeValue, float64(u.Slots), u.Account, u.Pool)
		ch <- prometheus.MustNewConstMetric(g.used, prometheus.GaugeValue, float64(u.Used), u.Account, u.Pool)
		ch <- prometheus.MustNewConstMetric(g.qued, prometheus.GaugeValue, float64(u.Queued), u.Account, u.Pool)
	}
	for _, u := range top {
		send(u)
	}
	send(other)
}

// topLimits returns the n fullest of use (data.SortBySaturation), and the
// rest summed as account "other", pool "" (zero when none is left). use is
// sorted in place.
func topLimits(use []data.LimitUsage, n int) (top []data.LimitUsage, other data.LimitUsage) {
	other.Account = OtherAccount
	data.SortBySaturation(use)
	for _, u := range use {
		if u.Account != OtherAccount && len(top) < n {
			top = append(top, u)
			continue
		}
		other.Slots += u.Slots
		other.Used += u.Used
		other.Queued += u.Queued
	}
	return top, other
}
