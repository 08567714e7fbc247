package monitor_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/internal/testkit/tcpproxy"
	"github.com/leasetop/leasetop/monitor"
)

// slowLeases is how many leases the slow-read tests write: about 900 kB of
// rows, which a proxy slowed to 2 kB every 10 ms delivers in 4.5 s at best.
const slowLeases = 6000

// slowTimeout is the read timeout the slow-read tests configure: well under
// the slowed read's 4.5 s, well over the 0.2 s its 256 rows between
// progress calls take to arrive.
const slowTimeout = 2 * time.Second

// proxiedStore writes n leases into a fresh database, straight into the
// table, and returns a store that reaches it through a proxy.
func proxiedStore(t *testing.T, n int) (*data.Store, *tcpproxy.Proxy) {
	t.Helper()
	s, p, _ := proxiedDB(t, n)
	return s, p
}

// proxiedDB is proxiedStore, with the database too (to write to it
// directly).
func proxiedDB(t *testing.T, n int) (*data.Store, *tcpproxy.Proxy, pgtest.DB) {
	t.Helper()
	db := pgtest.New(t)
	conn := db.Conn(t)
	for _, q := range []string{`SET session_replication_role = replica`,
		`INSERT INTO lease.session_lease (account_id, session_id, run_id, holder, fence, acquired_at, renewed_at, expires_at)
		 SELECT 'acct-' || (g % 100), 'sess-' || g, gen_random_uuid(), 'device-' || (g % 50), g,
		        now(), now(), now() + interval '1 hour'
		   FROM generate_series(1, $1::int) g`, `RESET session_replication_role`} {
		var args []any
		if strings.Contains(q, "$1") {
			args = append(args, n)
		}
		if _, err := conn.Exec(context.Background(), q, args...); err != nil {
			t.Fatalf("seed: %v", err)
		}
	}
	u, err := url.Parse(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	p, err := tcpproxy.Start(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	u.Host = p.Addr()
	return pgtest.OpenStore(t, u.String(), data.Options{}), p, db
}

// TestFeedSlowResyncCompletes: a resync that takes longer than ReadTimeout
// but keeps receiving rows is not cut off (the target: at 1,000,000 leases on
// a loaded machine the first read outlasted the fixed 10 s timeout every
// time, and the monitor never showed a picture). Before the idle timeout
// every resync here failed after 2 s, over and over.
func TestFeedSlowResyncCompletes(t *testing.T) {
	t.Parallel()
	s, p := proxiedStore(t, slowLeases)
	p.Slow(10 * time.Millisecond)
	m := startMirror(t, s, monitor.FeedConfig{ReadTimeout: slowTimeout})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := m.WaitFor(ctx, func(st *monitor.State) bool { return st.Len() == slowLeases }); err != nil {
		var h monitor.Health
		m.Read(func(st *monitor.State) { h = st.Health(time.Now()) })
		t.Fatalf("waiting for %d leases through a slow link: %v (health %+v)", slowLeases, err, h)
	}
}

// TestFeedStalledResyncTimesOut: a resync that stops receiving (the link
// blackholed in the middle of the rows) is still cut off after ReadTimeout
// with nothing received, and reported; once the link is back a resync
// completes.
func TestFeedStalledResyncTimesOut(t *testing.T) {
	t.Parallel()
	s, p := proxiedStore(t, slowLeases)
	p.Slow(10 * time.Millisecond)
	m := startMirror(t, s, monitor.FeedConfig{ReadTimeout: slowTimeout})
	readErr := make(chan error, 1)
	m.OnBatch(func(b monitor.Batch) {
		if b.ReadErr != nil {
			select {
			case readErr <- b.ReadErr:
			default:
			}
		}
	})
	deadline := time.Now().Add(time.Minute)
	for p.Sent() < 200<<10 { // the rows are on their way
		if time.Now().After(deadline) {
			t.Fatalf("the proxy delivered %d bytes in a minute, want 200 kB", p.Sent())
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.Blackhole()
	select {
	case err := <-readErr:
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "received nothing") {
			t.Errorf("ReadErr = %v, want the read cut off for receiving nothing", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("no read error a minute after the link stalled")
	}
	if n := lenOf(m); n != 0 {
		t.Errorf("after the stalled resync the state has %d leases, want 0 (no partial picture)", n)
	}
	p.Slow(0)
	p.Resume()
	waitFor(t, m, "every lease once the link is back", func(st *monitor.State) bool { return st.Len() == slowLeases })
}

// lenOf returns how many leases the mirror shows.
func lenOf(m interface{ Read(func(*monitor.State)) }) int {
	var n int
	m.Read(func(st *monitor.State) { n = st.Len() })
	return n
}
