package exporter_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestLimitMetrics: the exporter, as a lease_reader, exports no limit
// gauges while no account has a limit; then, with --max-limits 2, the two
// fullest limits' slots, slots used and queued tickets under their account
// and pool, the third summed as account="other"; and a freed slot is seen
// at the next scrape.
func TestLimitMetrics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	p := startExporter(t, db.ReaderURL(t), "--max-limits", "2")
	m := p.waitMetrics(t, 30*time.Second, "the first sync", func(m metricSet) bool { return m["leasetop_resyncs_total"] >= 1 })
	for name := range m {
		if strings.HasPrefix(name, "leasetop_limit_") {
			t.Fatalf("%s exported with no limit set", name)
		}
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := conn.Exec(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`SELECT lease.set_limit('acme', '', 1)`)
	exec(`SELECT lease.set_limit('globex', 'deep', 2)`)
	exec(`SELECT lease.set_limit('initech', '', 4)`)
	acmeRun := uuid.New()
	exec(`SELECT lease.acquire('acme', 'chat-1', $1, '1 hour', 'desktop')`, acmeRun)
	exec(`SELECT lease.acquire('globex', 'g-1', $1, '1 hour', 'phone', 'deep')`, uuid.New())
	exec(`SELECT lease.enqueue('acme', 'chat-1', $1, '1 hour', 'laptop')`, uuid.New())
	p.waitMetrics(t, 30*time.Second, "acme full, globex's pool half, initech summed as other", func(m metricSet) bool {
		return m[`leasetop_limit_slots{account="acme",pool=""}`] == 1 && m[`leasetop_limit_slots_used{account="acme",pool=""}`] == 1 &&
			m[`leasetop_limit_queued{account="acme",pool=""}`] == 1 &&
			m[`leasetop_limit_slots{account="globex",pool="deep"}`] == 2 && m[`leasetop_limit_slots_used{account="globex",pool="deep"}`] == 1 &&
			m[`leasetop_limit_slots{account="other",pool=""}`] == 4 && m[`leasetop_limit_slots_used{account="other",pool=""}`] == 0
	})
	m = p.metrics(t)
	for name := range m {
		if strings.Contains(name, `account="initech"`) {
			t.Errorf("%s is exported; with --max-limits 2 initech, the emptiest, is summed in other", name)
		}
	}
	exec(`SELECT lease.release('acme', 'chat-1', $1)`, acmeRun)
	p.waitMetrics(t, 30*time.Second, "acme's slot freed", func(m metricSet) bool {
		return m[`leasetop_limit_slots_used{account="acme",pool=""}`] == 0
	})
}
