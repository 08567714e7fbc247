package exporter_test

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/pgserver"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestFeedDownOnlyWhenPollForced: four real exporters that poll, for the
// four kinds of reason. A lease_reader on a hot standby and one started
// with --poll chose to poll; one through PgBouncer without --listen-dsn and
// one whose --listen-dsn is a standby (LISTEN fails there) poll because
// LISTEN does not work where it should. Each shows state="poll" and its
// reason in leasetop_feed_poll_reason; a real Prometheus scraping all four
// evaluates the shipped LeasetopFeedDown expression (taken from its loaded
// rules; its "for: 5m" is docs/alerts_test.yml's) and finds exactly the two
// forced ones.
func TestFeedDownOnlyWhenPollForced(t *testing.T) {
	db := pgtest.New(t)
	reader := db.ReaderURL(t) // before the standby: the role is in its base backup
	standby := pgtest.Standby(t)
	via := db.Via(t, pgtest.Bouncer(t, pgserver.BouncerOptions{PoolSize: 4}))
	exporters := []struct {
		reason string
		forced bool
		p      *exporterProc
	}{
		{"standby", false, startExporter(t, pgtest.DB{URL: reader}.On(t, standby))},
		{"requested", false, startExporter(t, db.URL, "--poll", "100ms")},
		{"pooler", true, startExporter(t, via)},
		{"listen_failed", true, startExporter(t, db.URL, "--listen-dsn", db.On(t, standby))},
	}
	targets := make([]string, len(exporters))
	wantFiring := map[string]bool{}
	for i, e := range exporters {
		m := e.p.waitMetrics(t, 60*time.Second, "polling for reason "+e.reason, func(m metricSet) bool {
			return m[`leasetop_feed_state{state="poll"}`] == 1
		})
		for _, r := range []string{"requested", "standby", "pooler", "listen_failed", "no_delivery"} {
			want := map[bool]float64{true: 1}[r == e.reason]
			if got, ok := m[`leasetop_feed_poll_reason{reason="`+r+`"}`]; !ok || got != want {
				t.Errorf("exporter polling for %s: leasetop_feed_poll_reason{reason=%q} = %g (present: %v), want %g; stderr %q",
					e.reason, r, got, ok, want, e.p.Stderr.String())
			}
		}
		targets[i] = e.p.addr
		if e.forced {
			wantFiring[e.p.addr] = true
		}
	}

	prom := startPrometheus(t, targets...)
	expr := feedDownExpr(t, prom)
	prom.waitFor(t, "a scrape of every exporter", func() bool {
		return len(prom.query(t, `up == 1`, "instance")) == len(targets)
	})
	got := prom.query(t, expr, "instance")
	if !sameKeys(got, wantFiring) {
		t.Fatalf("LeasetopFeedDown's expression %q matches %v; want only the forced ones %v (standby %s, --poll %s)",
			expr, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(wantFiring)), exporters[0].p.addr, exporters[1].p.addr)
	}
}

// feedDownExpr returns the LeasetopFeedDown expression as Prometheus loaded
// it from docs/alerts.yml.
func feedDownExpr(t *testing.T, prom *prometheus) string {
	t.Helper()
	var rules struct {
		Groups []struct {
			Rules []struct {
				Name  string `json:"name"`
				Query string `json:"query"`
			} `json:"rules"`
		} `json:"groups"`
	}
	prom.api(t, "/api/v1/rules", &rules)
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Name == "LeasetopFeedDown" {
				return r.Query
			}
		}
	}
	t.Fatal("Prometheus loaded no LeasetopFeedDown rule")
	return ""
}

// sameKeys reports whether a and b have the same keys.
func sameKeys[V1, V2 any](a map[string]V1, b map[string]V2) bool {
	return len(a) == len(b) && !slices.ContainsFunc(slices.Collect(maps.Keys(a)), func(k string) bool {
		_, ok := b[k]
		return !ok
	})
}
