package monitor_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/pgserver"
	"github.com/leasetop/leasetop/internal/testkit/monitortest"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/monitor"
)

// openOn returns a monitor.Context that opens a store on dsn.
func openOn(name, dsn string) monitor.Context {
	return monitor.Context{Name: name, Open: func(ctx context.Context) (*data.Store, error) { return data.Open(ctx, dsn) }}
}

// runMirror runs m until the test ends.
func runMirror(t *testing.T, m *monitortest.Mirror) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = m.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// One State of two databases: the same key in both is two leases, each
// database's event ids (which collide: each database has its own sequence)
// are applied once each, a release in one leaves the other's lease, and the
// events carry their context.
func TestStateOfTwoContexts(t *testing.T) {
	t.Parallel()
	eu, us := pgtest.New(t), pgtest.New(t)
	euStore, usStore := eu.Store(t), us.Store(t)
	m := monitortest.NewMirrorOf([]monitor.Context{openOn("eu", eu.URL), openOn("us", us.URL)}, monitor.Config{})
	runMirror(t, m)
	waitFor(t, m, "both contexts' first resync", func(s *monitor.State) bool {
		return s.HealthOf(0, time.Now()).Link == monitor.LinkLive && s.HealthOf(1, time.Now()).Link == monitor.LinkLive
	})

	k := data.Key{Account: "acme", Session: "chat-1"}
	euRun, usRun := uuid.New(), uuid.New()
	monitor.MustAcquire(t, euStore, k, euRun, time.Minute)
	monitor.MustAcquire(t, usStore, k, usRun, time.Minute)
	for i := range 3 { // more ids in us than in eu: the same ids, other events
		monitor.MustAcquire(t, usStore, data.Key{Account: "globex", Session: fmt.Sprint("s", i)}, uuid.New(), time.Minute)
	}
	waitFor(t, m, "both leases of acme/chat-1 and us's three more", func(s *monitor.State) bool { return s.Len() == 5 })
	m.Read(func(s *monitor.State) {
		for _, c := range []struct {
			ctx string
			run uuid.UUID
		}{{"eu", euRun}, {"us", usRun}} {
			l, ok := s.LeaseOf(monitor.Key{Context: c.ctx, Key: k})
			if !ok || l.RunID != data.PublicRunID(c.run) || l.Context != c.ctx {
				t.Errorf("LeaseOf(%s:%v) = %+v, %v; want its run in context %s", c.ctx, k, l, ok, c.ctx)
			}
		}
		byContext := map[string][]int64{}
		for _, ev := range s.Events() {
			byContext[ev.Context] = append(byContext[ev.Context], ev.ID)
		}
		if len(byContext["eu"]) != 1 || len(byContext["us"]) != 4 || len(byContext) != 2 {
			t.Errorf("events by context = %v, want eu's 1 and us's 4 (ids that collide kept apart)", byContext)
		}
		if got := s.Applied(); got != 5 {
			t.Errorf("applied %d events, want 5", got)
		}
	})

	if _, err := euStore.Release(context.Background(), k, euRun); err != nil {
		t.Fatal(err)
	}
	waitFor(t, m, "eu's release", func(s *monitor.State) bool {
		_, euHeld := s.LeaseOf(monitor.Key{Context: "eu", Key: k})
		return !euHeld
	})
	m.Read(func(s *monitor.State) {
		if l, ok := s.LeaseOf(monitor.Key{Context: "us", Key: k}); !ok || l.RunID != data.PublicRunID(usRun) {
			t.Errorf("us's lease of %v after eu's release = %+v, %v; want it still held", k, l, ok)
		}
	})

	// A resync of one context (asked of all) replaces its leases only, and
	// repeats no event.
	m.Feeds().Resync()
	monitor.MustAcquire(t, euStore, data.Key{Account: "acme", Session: "chat-2"}, uuid.New(), time.Minute)
	waitFor(t, m, "eu's next lease", func(s *monitor.State) bool { return s.Len() == 5 })
	m.Read(func(s *monitor.State) {
		if got := s.Applied(); got != 7 {
			t.Errorf("applied %d events after a resync of both and 2 more transitions, want 7", got)
		}
	})
}

// Each context's leases are on its own server's clock, and a State of
// several puts them all on this machine's: a lease of a minute on a server
// three hours ahead has a minute left, as one on a server on time does.
func TestStateOfContextsOnOneClock(t *testing.T) {
	t.Parallel()
	onTime := pgtest.New(t)
	_, ahead := pgtest.OtherServerWith(t, "ahead", pgserver.Options{Env: pgtest.SkewedClock(t, "+3h")})
	m := monitortest.NewMirrorOf([]monitor.Context{openOn("on-time", onTime.URL), openOn("ahead", ahead.URL)}, monitor.Config{})
	runMirror(t, m)
	k := data.Key{Account: "acme", Session: "chat-1"}
	monitor.MustAcquire(t, onTime.Store(t), k, uuid.New(), time.Minute)
	monitor.MustAcquire(t, ahead.Store(t), k, uuid.New(), time.Minute)
	// The ahead context's clock is measured by its feed's first read, which
	// its lease may reach the State before (by its event): wait for both.
	waitFor(t, m, "both leases and the ahead server's clock", func(s *monitor.State) bool {
		return s.Len() == 2 && !s.HealthOf(1, time.Now()).Clock.IsZero()
	})
	m.Read(func(s *monitor.State) {
		now := time.Now()
		if off := s.HealthOf(1, now).Clock.Offset(); off < 2*time.Hour {
			t.Fatalf("the server ahead measured %v ahead, want about 3h: the test's clock skew did not take", off)
		}
		for _, name := range []string{"on-time", "ahead"} {
			l, _ := s.LeaseOf(monitor.Key{Context: name, Key: k})
			if left := l.ExpiresAt.Sub(s.ServerNow(now)); left < 30*time.Second || left > time.Minute+time.Second {
				t.Errorf("%s's lease of a minute has %v left on the State's clock, want about a minute", name, left)
			}
		}
		c := s.CountIndex().At(s.ServerNow(now))
		if c.Held != 2 || c.Expired != 0 {
			t.Errorf("counts = %+v, want both held, none expired", c)
		}
	})
}

// A context whose database cannot be reached is shown down, with why,
// while the other keeps updating; it comes in by itself once it can.
func TestStateOfContextsOneDown(t *testing.T) {
	t.Parallel()
	eu := pgtest.New(t)
	euStore := eu.Store(t)
	var (
		mu   sync.Mutex
		open = false // us's database "comes back" when this is set
	)
	us := pgtest.New(t)
	usCtx := monitor.Context{Name: "us", Open: func(ctx context.Context) (*data.Store, error) {
		mu.Lock()
		up := open
		mu.Unlock()
		if !up {
			return data.Open(ctx, "postgres://nobody@127.0.0.1:1/app?connect_timeout=1")
		}
		return data.Open(ctx, us.URL)
	}}
	m := monitortest.NewMirrorOf([]monitor.Context{openOn("eu", eu.URL), usCtx}, monitor.Config{})
	runMirror(t, m)
	waitFor(t, m, "us down and eu live", func(s *monitor.State) bool {
		h := s.HealthOf(1, time.Now())
		return s.HealthOf(0, time.Now()).Link == monitor.LinkLive && h.Link == monitor.LinkDown && h.Err != nil
	})
	m.Read(func(s *monitor.State) {
		var ce *data.ConnectError
		if h := s.HealthOf(1, time.Now()); !errors.As(h.Err, &ce) {
			t.Errorf("us's health error = %v, want the connect error", h.Err)
		}
	})
	monitor.MustAcquire(t, euStore, data.Key{Account: "acme", Session: "chat-1"}, uuid.New(), time.Minute)
	waitFor(t, m, "eu's lease while us is down", func(s *monitor.State) bool { return s.Len() == 1 })

	monitor.MustAcquire(t, us.Store(t), data.Key{Account: "acme", Session: "chat-1"}, uuid.New(), time.Minute)
	mu.Lock()
	open = true
	mu.Unlock()
	waitFor(t, m, "us coming in by itself", func(s *monitor.State) bool {
		return s.HealthOf(1, time.Now()).Link == monitor.LinkLive && s.Len() == 2
	})
	m.Read(func(s *monitor.State) {
		var ctxs []string
		for _, l := range s.Leases() {
			ctxs = append(ctxs, l.Context)
		}
		if !slices.Equal(ctxs, []string{"eu", "us"}) {
			t.Errorf("leases' contexts = %v, want eu and us", ctxs)
		}
	})
}
