package monitor_test

import (
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/pgserver"
	"github.com/leasetop/leasetop/internal/testkit/monitortest"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/monitor"
)

// waitLink waits until the state has its first resync and the header's
// link is want, and returns the health.
func waitLink(t *testing.T, m *monitortest.Mirror, want monitor.Link) monitor.Health {
	t.Helper()
	var h monitor.Health
	waitFor(t, m, "the first resync and the link "+want.String(), func(s *monitor.State) bool {
		h = s.Health(time.Now())
		return s.Synced() && h.Link == want
	})
	return h
}

// neverLeaves fails the test if the link was ever anything but want since
// the mirror first showed it: poll mode does not flap.
func neverLeaves(t *testing.T, m *monitortest.Mirror, want monitor.Link) (stop func()) {
	t.Helper()
	var left []monitor.Link
	m.OnBatch(func(b monitor.Batch) {
		// The link this batch's connection state alone shows: a fresh
		// state with nothing but the connection applied.
		s, now := monitor.NewState(monitor.Config{}), time.Now()
		s.Apply(monitor.Batch{Conn: b.Conn}, now)
		if l := s.Health(now).Link; l != want {
			left = append(left, l)
		}
	})
	return func() {
		m.OnBatch(nil)
		m.Read(func(*monitor.State) {}) // the hook ran under the lock: left is complete
		if len(left) > 0 {
			t.Errorf("the link left %v for %v", want, left)
		}
	}
}

// TestMirrorThroughPooler: the monitor's feed through a real PgBouncer in
// transaction mode, while clients of their own churn through it too. Without
// a listen DSN the feed polls (its listener finds the pooler before any
// LISTEN) and says so; with one it is live on the direct connection. Either
// way the state ends equal to the database, every event applied once.
func TestMirrorThroughPooler(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		listen bool
		want   monitor.Link
	}{
		{"no listen DSN", false, monitor.LinkPoll},
		{"listen DSN", true, monitor.LinkLive},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := pgtest.New(t)
			via := db.Via(t, pgtest.Bouncer(t, pgserver.BouncerOptions{PoolSize: 4}))
			var opt data.Options
			if tc.listen {
				opt.ListenDSN = db.URL
			}
			m := startMirror(t, pgtest.OpenStore(t, via, opt), monitor.FeedConfig{DeltaInterval: 100 * time.Millisecond})
			h := waitLink(t, m, tc.want)
			if tc.want == monitor.LinkPoll && (h.PollReason.Cause != data.PollPooler || h.Poll != data.DefaultFallbackPoll) {
				t.Fatalf("health = %+v, want polling every %s because of the pooler", h, data.DefaultFallbackPoll)
			}
			stop := neverLeaves(t, m, tc.want)
			clients := make([]*data.Store, 4)
			for i := range clients {
				clients[i] = pgtest.OpenStore(t, via, data.Options{})
			}
			churn(clients, 40)
			assertMirrorsDB(t, m, db.Conn(t))
			stop()
		})
	}
}

// TestMirrorOnStandby: `leasetop watch --read-only` on a hot standby. The
// feed, as a lease_reader, polls from the start, shows the standby's replay
// lag, and sees every transition committed on the primary exactly once
// (compared with lease.event on the primary).
func TestMirrorOnStandby(t *testing.T) {
	db := pgtest.New(t)
	reader, _ := pgtest.Login(t, db, "lease_reader")
	standby := pgtest.Standby(t)
	readerOnStandby := pgtest.DB{URL: reader}.On(t, standby)
	m := startMirror(t, pgtest.OpenStore(t, readerOnStandby, data.Options{}), monitor.FeedConfig{DeltaInterval: 100 * time.Millisecond})
	h := waitLink(t, m, monitor.LinkPoll)
	if h.PollReason.Cause != data.PollStandby || !h.Standby {
		t.Fatalf("health = %+v, want polling because the server is a standby", h)
	}
	stop := neverLeaves(t, m, monitor.LinkPoll)
	churn(directClients(t, db, 4), 40)
	pgtest.WaitReplayed(t, standby)
	assertMirrorsDB(t, m, db.Conn(t))
	stop()
	m.Read(func(s *monitor.State) {
		h := s.Health(time.Now())
		if !h.Standby || !h.LagKnown || h.ReplayLag < 0 || h.ReplayLag > time.Minute {
			t.Errorf("health = %+v, want a standby with a replay lag between 0 and a minute", h)
		}
	})
}

// TestMirrorInPollMode: poll mode on request (--poll) on a direct
// connection: the header says POLL with the interval and never leaves it,
// and the state ends equal to the database, every event applied once.
func TestMirrorInPollMode(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	m := startMirror(t, db.Store(t), monitor.FeedConfig{DeltaInterval: 100 * time.Millisecond,
		Listener: data.ListenerConfig{Poll: 50 * time.Millisecond}})
	h := waitLink(t, m, monitor.LinkPoll)
	if h.PollReason.Cause != data.PollRequested || h.Poll != 50*time.Millisecond {
		t.Fatalf("health = %+v, want polling every 50ms on request", h)
	}
	stop := neverLeaves(t, m, monitor.LinkPoll)
	churn(directClients(t, db, 4), 60)
	assertMirrorsDB(t, m, db.Conn(t))
	stop()
}

// directClients returns n stores on db, each its own pool.
func directClients(t *testing.T, db pgtest.DB, n int) []*data.Store {
	t.Helper()
	clients := make([]*data.Store, n)
	for i := range clients {
		clients[i] = db.Store(t)
	}
	return clients
}
