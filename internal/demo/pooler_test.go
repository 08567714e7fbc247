package demo_test

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/leasetop/leasetop/internal/pgserver"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// eventLine is a line of the headless stream that shows a lease event
// (stream.go's describe), with the seconds since the demo started.
var eventLine = regexp.MustCompile(`(?m)^\s*(\d+\.\d+)s  (acquired|taken over|released|force-released|ZOMBIE)\s`)

// TestHeadlessDemoThroughPooler: `leasetop demo --dsn` through a real
// PgBouncer in transaction mode, where the demo's listener polls and
// delivers events as rows. The stream shows events while the demo runs, in
// both halves of its 16 s, not only when it catches up after the devices
// stopped; and the same invariants hold as on a direct connection.
func TestHeadlessDemoThroughPooler(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	via := db.Via(t, pgtest.Bouncer(t, pgserver.BouncerOptions{PoolSize: 12}))
	p := startLeasetop(t, "demo", "--headless", "--duration", "16s", "--ttl", "2s", "--seed", "3", "--dsn", via)
	checkHeadlessRun(t, p, db, via)

	const run = 16.0
	var first, second int // events shown while the demo ran, per half
	for _, m := range eventLine.FindAllStringSubmatch(p.stdout(), -1) {
		at, _ := strconv.ParseFloat(m[1], 64)
		switch {
		case at < run/2:
			first++
		case at < run:
			second++
		}
	}
	if first == 0 || second == 0 {
		t.Errorf("events shown while the demo ran: %d in its first half, %d in its second; want some in each\n%s",
			first, second, p.stdout())
	}
}
