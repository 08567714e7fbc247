package data_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/data"
	"github.com/leasetop/leasetop/internal/pgtest"
)

// startListener runs a listener until the test ends.
func startListener(t *testing.T, s *data.Store, cfg data.ListenerConfig) *data.Listener {
	t.Helper()
	l := s.NewListener(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = l.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return l
}

func waitResync(t *testing.T, l *data.Listener) {
	t.Helper()
	select {
	case <-l.Resync():
	case <-time.After(15 * time.Second):
		t.Fatalf("no resync signal; listener state %+v", l.State())
	}
}

func waitEvent(t *testing.T, l *data.Listener) data.Event {
	t.Helper()
	select {
	case ev := <-l.Events():
		return ev
	case <-time.After(15 * time.Second):
		t.Fatalf("no event; listener state %+v", l.State())
		return data.Event{}
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
	waitResync(t, l) // the consumer was behind: it is told to resync
	deadline := time.Now().Add(10 * time.Second)
	for l.Dropped() != 3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // polling a counter the listener goroutine updates
	}
	if got := l.Dropped(); got != 3 {
		t.Errorf("Dropped() = %d, want 3", got)
	}
}
