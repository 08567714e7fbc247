package data_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// testListener is a running listener and what the test has taken from its
// batches and not looked at yet.
type testListener struct {
	*data.Listener
	queue []item
}

// item is one thing a listener delivered: an event with its source, or a
// resync marker.
type item struct {
	ev     data.Event
	src    data.Origin
	resync bool
}

// startListener runs a listener until the test ends.
func startListener(t *testing.T, s *data.Store, cfg data.ListenerConfig) *testListener {
	t.Helper()
	l := s.NewListener(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = l.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return &testListener{Listener: l}
}

// next returns the next thing l delivers, failing after 15 s.
func (l *testListener) next(t *testing.T) item {
	t.Helper()
	for len(l.queue) == 0 {
		select {
		case b := <-l.Deliveries():
			if b.Resync {
				l.queue = append(l.queue, item{resync: true})
			}
			for _, ev := range b.Events {
				l.queue = append(l.queue, item{ev: ev, src: b.Origin})
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("nothing delivered in 15 s; listener state %+v", l.State())
		}
	}
	it := l.queue[0]
	l.queue = l.queue[1:]
	return it
}

// waitResync skips what l delivers until a resync marker.
func waitResync(t *testing.T, l *testListener) {
	t.Helper()
	for !l.next(t).resync {
	}
}

// waitEvent returns the next event l delivers, skipping resync markers.
func waitEvent(t *testing.T, l *testListener) data.Event {
	t.Helper()
	ev, _ := waitEventFrom(t, l)
	return ev
}

// waitEventFrom is waitEvent with the event's source.
func waitEventFrom(t *testing.T, l *testListener) (data.Event, data.Origin) {
	t.Helper()
	for {
		if it := l.next(t); !it.resync {
			return it.ev, it.src
		}
	}
}

func TestListenerDeliversAndSurvivesTermination(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	s, admin := db.Store(t), db.Conn(t)
	l := startListener(t, s, data.ListenerConfig{ReconnectDelay: 50 * time.Millisecond})
	waitResync(t, l)
	if st := l.State(); st.Status != data.ListenerLive {
		t.Fatalf("state after first resync = %v, want LIVE", st.Status)
	}

	k := data.Key{Account: "a", Session: "s"}
	run := uuid.New()
	g := mustAcquire(t, s, k, run, time.Minute)
	if ev := waitEvent(t, l); ev.Kind != data.KindAcquired || ev.RunID != data.PublicRunID(run) || ev.Fence != g.Fence {
		t.Fatalf("event = %+v, want acquired by %v", ev, run)
	}

	// Kill the listener's backend: it must reconnect and ask for a resync.
	var n int
	if err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = 'leasetop listener' AND datname = current_database()`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("terminated %d listener backends (%v), want 1", n, err)
	}
	waitResync(t, l)
	if st := l.State(); st.Status != data.ListenerLive {
		t.Fatalf("state after reconnect = %v, want LIVE", st.Status)
	}
	if _, err := s.Release(ctx, k, run); err != nil {
		t.Fatal(err)
	}
	if ev := waitEvent(t, l); ev.Kind != data.KindReleased {
		t.Fatalf("event after reconnect = %+v, want released", ev)
	}
}

func TestListenerDropsMalformedPayloads(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	s, other := db.Store(t), db.Conn(t)
	l := startListener(t, s, data.ListenerConfig{})
	waitResync(t, l)
	for _, p := range []string{"not json", `{"kind":"acquired"}`, `{"id":1,"kind":"pwned"}`, `[]`, `{"id":"x"}`,
		`{"id":5,"kind":"acquired","account_id":"a\u001b[2J","session_id":"s","run_id":"` + uuid.NewString() + `"}`} {
		if _, err := other.Exec(ctx, `SELECT pg_notify('lease_events', $1)`, p); err != nil {
			t.Fatal(err)
		}
	}
	mustAcquire(t, s, data.Key{Account: "a", Session: "s"}, uuid.New(), time.Minute)
	if ev := waitEvent(t, l); ev.Kind != data.KindAcquired {
		t.Fatalf("first delivered event = %+v, want the real acquired", ev)
	}
	if got := l.Malformed(); got != 6 {
		t.Errorf("Malformed() = %d, want 6", got)
	}
	if st := l.State(); st.Status != data.ListenerLive {
		t.Errorf("state = %v, want LIVE: malformed payloads must not be fatal", st.Status)
	}
}

func TestListenerOverflowAsksForResync(t *testing.T) {
	db := pgtest.New(t)
	s := db.Store(t)
	l := startListener(t, s, data.ListenerConfig{Buffer: 2})
	waitResync(t, l)
	for i := range 5 {
		mustAcquire(t, s, data.Key{Account: "a", Session: string(rune('a' + i))}, uuid.New(), time.Minute)
	}
	// Nobody reads: two notifications wait (one being handed over, one
	// pending), three find no room.
	pgtest.Eventually(t, 15*time.Second, "three notifications dropped", func() bool { return l.Dropped() >= 3 })
	if got := l.Dropped(); got != 3 {
		t.Errorf("Dropped() = %d, want 3", got)
	}
	for range 2 {
		ev, src := waitEventFrom(t, l)
		if src != data.FromNotify || ev.Kind != data.KindAcquired {
			t.Fatalf("delivered %+v from %v, want an acquired notification", ev, src)
		}
	}
	// In their place the consumer gets one resync, right after what it had room for.
	if it := l.next(t); !it.resync {
		t.Fatalf("after the two it had room for: %+v, want one resync marker", it)
	}
	if len(l.queue) != 0 {
		t.Fatalf("after the resync marker: %+v, want nothing more", l.queue)
	}
}

// TestPollingListenerWaitsForRoom: in poll mode a consumer that is behind
// loses nothing and needs no resync: the listener reads only as many rows as
// there is room for, and the rest wait in the table.
func TestPollingListenerWaitsForRoom(t *testing.T) {
	db := pgtest.New(t)
	s := db.Store(t)
	l := startListener(t, s, data.ListenerConfig{Buffer: 2, Poll: 10 * time.Millisecond})
	waitResync(t, l)
	for i := range 5 {
		mustAcquire(t, s, data.Key{Account: "a", Session: string(rune('a' + i))}, uuid.New(), time.Minute)
	}
	var made []int64
	for _, ev := range events(t, s) {
		made = append(made, ev.ID)
	}
	var got []int64
	for len(got) < len(made) {
		it := l.next(t)
		if it.resync || it.src != data.FromPoll {
			t.Fatalf("delivered %+v, want only rows read by polling", it)
		}
		got = append(got, it.ev.ID)
	}
	if !slices.Equal(got, made) {
		t.Errorf("rows %v, want %v", got, made)
	}
	if d := l.Dropped(); d != 0 {
		t.Errorf("Dropped() = %d, want 0", d)
	}
}
