package ui

import (
	"context"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/monitor"
)

// contextsModel returns a driven model of contexts, through NewProgram as
// leasetop watch --context builds it; everything stops when the test ends.
func contextsModel(t *testing.T, contexts []Context, w, h int) *driver {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p, err := NewProgram(ctx, Options{Config: Config{Contexts: contexts}})
	if err != nil {
		cancel()
		t.Fatalf("NewProgram: %v", err)
	}
	stopFeeds := p.feed.Start(ctx)
	d := &driver{t: t, m: p.Model(), msgs: make(chan tea.Msg, 64), stop: make(chan struct{})}
	t.Cleanup(func() {
		cancel()
		stopFeeds()
		close(d.stop)
		d.wg.Wait()
	})
	d.send(tea.WindowSizeMsg{Width: w, Height: h})
	d.run(d.m.Init())
	return d
}

// storeContext is a context of store, with its mode.
func storeContext(name string, store *data.Store, readOnly, protected bool) Context {
	return Context{
		Context:  monitor.Context{Name: name, Open: func(context.Context) (*data.Store, error) { return store, nil }},
		ReadOnly: readOnly, Protected: protected,
	}
}

// TestContextModesGuardQueueClear, a safety point: two databases
// on two servers, each with a queued session of the same name. In the
// read-only context C is refused and nothing is cleared, and the source
// itself refuses a clear there, whatever key led to it; in the protected
// context C asks for the session id, y does not confirm, and typing the id
// clears that context's queue alone.
func TestContextModesGuardQueueClear(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	eu := pgtest.New(t).Store(t)
	_, usDB := pgtest.OtherServer(t, "us_app")
	us := usDB.Store(t)
	k := data.Key{Account: "acme", Session: "chat-squat"}
	for _, s := range []*data.Store{eu, us} {
		if _, err := s.Acquire(ctx, k, uuid.New(), time.Hour, "desktop"); err != nil {
			t.Fatal(err)
		}
		for _, label := range []string{"phone", "tablet"} {
			if _, err := s.Enqueue(ctx, k, uuid.New(), time.Hour, label); err != nil {
				t.Fatal(err)
			}
		}
	}
	queued := func(s *data.Store) int {
		t.Helper()
		q, err := s.QueueOf(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		return len(q)
	}
	euKey, usKey := monitor.Key{Context: "eu", Key: k}, monitor.Key{Context: "us", Key: k}
	d := contextsModel(t, []Context{storeContext("eu", eu, false, true), storeContext("us", us, true, false)}, 140, 30)
	// The queues' lengths are read apart from the feed: wait for both, and
	// for both leases in the table.
	d.waitFor("both queues' lengths and both leases", func(m *Model) bool {
		_, eu := m.state.LeaseOf(euKey)
		_, us := m.state.LeaseOf(usKey)
		return m.queues.length(euKey) == 2 && m.queues.length(usKey) == 2 && eu && us && len(m.rows) == 2
	})
	selectKey := func(want monitor.Key) {
		t.Helper()
		d.press("g")
		for range len(d.m.rows) {
			if l, ok := d.m.selected(); ok && monitor.KeyOf(l) == want {
				return
			}
			d.press("j")
		}
		t.Fatalf("%v not in the table:\n%s", want, screen(d.m))
	}

	selectKey(usKey)
	d.press("C")
	if d.m.dialog != nil || !strings.Contains(d.m.status, "context us is read-only: clearing a queue is refused there") {
		t.Errorf("C in the read-only context: dialog %v, status %q; want no dialog and the refusal", d.m.dialog != nil, d.m.status)
	}
	if _, err := d.m.cfg.Source.ClearQueueFunc(usKey, "behind the keys"); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("the source cleared a queue of the read-only context (err %v)", err)
	}
	if n := queued(us); n != 2 {
		t.Fatalf("the read-only context's queue has %d tickets, want 2", n)
	}

	selectKey(euKey)
	d.press("C")
	out := screen(d.m)
	if d.m.dialog == nil || d.m.dialog.typed == nil || !strings.Contains(out, "protected context: type the session id") {
		t.Fatalf("C in the protected context did not ask for the session id:\n%s", out)
	}
	d.press("y", "enter")
	if d.m.dialog == nil || !strings.Contains(d.m.status, "type the session id exactly as shown") {
		t.Fatalf("y then enter: dialog %v, status %q; want the dialog still open and told to type the id", d.m.dialog != nil, d.m.status)
	}
	if n := queued(eu); n != 2 {
		t.Fatalf("y cleared %d tickets of a protected context", 2-n)
	}
	d.press("backspace")
	d.press(strings.Split(k.Session, "")...)
	d.press("enter")
	d.waitFor("the clear's outcome", func(m *Model) bool { return strings.HasPrefix(m.status, "cleared") })
	if !strings.Contains(d.m.status, "cleared 2 tickets") || queued(eu) != 0 || queued(us) != 2 {
		t.Errorf("status %q, eu %d tickets, us %d; want eu's 2 cleared and us's 2 kept", d.m.status, queued(eu), queued(us))
	}
}
