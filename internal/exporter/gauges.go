package exporter

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// Feed states of leasetop_feed_state, one series each. "poll" is the feed
// reading lease.event on an interval instead of listening (--poll, or where
// LISTEN cannot work: a standby, a transaction pooler without a listen DSN).
var feedStates = []string{"live", "reconnecting", "down", "poll"}

// gaugeDescs describe what gauges exports.
type gaugeDescs struct {
	held, expiring, expired *prometheus.Desc
	oldest                  *prometheus.Desc
	feedState               *prometheus.Desc
	syncAge                 *prometheus.Desc
	clockOffset             *prometheus.Desc
	dropped, malformed      *prometheus.Desc
}

func newGaugeDescs(byAccount bool) gaugeDescs {
	var account []string
	if byAccount {
		account = []string{"account"}
	}
	return gaugeDescs{
		held: prometheus.NewDesc("leasetop_leases_held",
			"Unexpired leases, on the server clock.", account, nil),
		expiring: prometheus.NewDesc("leasetop_leases_expiring",
			"Unexpired leases that expire within the exporter's --expiring-within window (default 5s): their holders are missing renewals.", account, nil),
		expired: prometheus.NewDesc("leasetop_leases_expired_unclaimed",
			"Expired leases that nobody has released or taken over: a holder that likely died.", account, nil),
		oldest: prometheus.NewDesc("leasetop_oldest_lease_age_seconds",
			"How long the oldest unexpired lease has been held by its run (0 when none is held).", nil, nil),
		feedState: prometheus.NewDesc("leasetop_feed_state",
			"The exporter's feed: 1 for the state it is in (live, reconnecting, down, poll), 0 for the others.", []string{"state"}, nil),
		syncAge: prometheus.NewDesc("leasetop_feed_sync_age_seconds",
			"Seconds since the exporter last read the database successfully (since it started, before its first read).", nil, nil),
		clockOffset: prometheus.NewDesc("leasetop_server_clock_offset_seconds",
			"The database server's clock minus the exporter's, as last measured.", nil, nil),
		dropped: prometheus.NewDesc("leasetop_notifications_dropped_total",
			"Notifications the listener dropped because the exporter was behind (each followed by a resync).", nil, nil),
		malformed: prometheus.NewDesc("leasetop_notifications_malformed_total",
			"Notifications on the lease_events channel that were not a valid event payload.", nil, nil),
	}
}

// gauges is the Collector of everything computed from the state when
// Prometheus scrapes.
type gauges struct {
	p *part
	d gaugeDescs
}

// Describe sends every descriptor.
func (g *gauges) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{g.d.held, g.d.expiring, g.d.expired, g.d.oldest,
		g.d.feedState, g.d.syncAge, g.d.clockOffset, g.d.dropped, g.d.malformed} {
		ch <- d
	}
}

// Collect computes the gauges at this instant.
func (g *gauges) Collect(ch chan<- prometheus.Metric) {
	s := g.p.scan(time.Now())
	if g.p.e.cfg.ByAccount {
		for _, a := range s.accounts {
			g.leaseGauges(ch, a.counts, a.name)
		}
	} else {
		g.leaseGauges(ch, s.total)
	}
	ch <- prometheus.MustNewConstMetric(g.d.oldest, prometheus.GaugeValue, s.oldest.Seconds())
	for _, st := range feedStates {
		v := 0.0
		if st == s.feed {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(g.d.feedState, prometheus.GaugeValue, v, st)
	}
	ch <- prometheus.MustNewConstMetric(g.d.syncAge, prometheus.GaugeValue, s.syncAge.Seconds())
	if !s.clock.IsZero() {
		ch <- prometheus.MustNewConstMetric(g.d.clockOffset, prometheus.GaugeValue, s.clock.Offset().Seconds())
	}
	ch <- prometheus.MustNewConstMetric(g.d.dropped, prometheus.CounterValue, float64(s.dropped))
	ch <- prometheus.MustNewConstMetric(g.d.malformed, prometheus.CounterValue, float64(s.malformed))
}

func (g *gauges) leaseGauges(ch chan<- prometheus.Metric, c counts, account ...string) {
	ch <- prometheus.MustNewConstMetric(g.d.held, prometheus.GaugeValue, float64(c.held), account...)
	ch <- prometheus.MustNewConstMetric(g.d.expiring, prometheus.GaugeValue, float64(c.expiring), account...)
	ch <- prometheus.MustNewConstMetric(g.d.expired, prometheus.GaugeValue, float64(c.expired), account...)
}

// counts are the lease gauges of a set of leases.
type counts struct {
	held, expiring, expired int
}

func (c *counts) add(o counts) {
	c.held += o.held
	c.expiring += o.expiring
	c.expired += o.expired
}

// scanned is the state's figures at one instant.
type scanned struct {
	total     counts
	accounts  []accountCounts // with ByAccount: the top accounts, then "other"
	oldest    time.Duration
	feed      string
	syncAge   time.Duration
	clock     data.Clock
	dropped   int64
	malformed int64
}

// scan computes the figures of the first (or only) database; see part.scan.
func (e *Exporter) scan(now time.Time) scanned { return e.parts[0].scan(now) }

// scan computes the figures at local time now in one pass over the leases,
// under the lock.
func (p *part) scan(now time.Time) scanned {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, st := p.e, p.state
	h := st.Health(now)
	serverNow := st.ServerNow(now)
	nowNS, soonNS := serverNow.UnixNano(), serverNow.Add(e.cfg.ExpiringWithin).UnixNano()
	// A lease counts as expired once it has been for longer than the feed's
	// view of renewals may be old (monitor.Health.RenewalsAge, a pass of
	// its sweep of the lease table): a renewal it has not read yet never
	// makes one look expired; one that was not renewed counts up to that
	// much late.
	expiredNS := serverNow.Add(-h.RenewalsAge).UnixNano()
	oldest := nowNS // earliest acquisition of an unexpired lease
	var s scanned
	var perAccount []counts
	if e.cfg.ByAccount {
		perAccount = make([]counts, st.Accounts())
	}
	st.ScanInstants(func(expires, acquired int64, account uint32) {
		var c counts
		switch {
		case expires <= expiredNS: // expired once now >= ExpiresAt (and the view of renewals caught up)
			c.expired = 1
		default:
			c.held = 1
			if expires <= soonNS {
				c.expiring = 1
			}
			oldest = min(oldest, acquired)
		}
		s.total.add(c)
		if perAccount != nil {
			perAccount[account].add(c)
		}
	})
	s.oldest = max(time.Duration(nowNS-oldest), 0)
	if perAccount != nil {
		s.accounts = topAccounts(st.AccountName, perAccount, e.cfg.MaxAccounts)
	}
	s.feed = feedState(h.Link)
	s.syncAge = h.SyncedAgo
	if !st.Synced() {
		s.syncAge = now.Sub(e.started)
	}
	s.clock = st.Clock()
	s.dropped, s.malformed = p.dropped, st.Malformed()
	return s
}

// feedState names a link status as leasetop_feed_state does. Not yet
// connected counts as reconnecting: the feed is trying, and turns down
// after monitor.DownAfter or monitor.DownAttempts.
func feedState(l monitor.Link) string {
	switch l {
	case monitor.LinkLive:
		return "live"
	case monitor.LinkConnecting, monitor.LinkReconnecting:
		return "reconnecting"
	case monitor.LinkPoll:
		return "poll"
	default:
		return "down"
	}
}
