package demo_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestHeadlessDemoShowsOnlyEventsItReadBack: while a headless
// demo runs, a role with CONNECT only sends notifications naming the demo's
// account: the payloads of events older than the demo (of another account,
// rewritten) and events with ids far in the future, each with a holder
// label that must never show. Before, the demo showed every notification
// as its payload said, once per id it had not shown. Now the listener drops
// the old ids and the demo reads the others back, finding no row: neither
// label is shown, and the demo's own events after them still are.
func TestHeadlessDemoShowsOnlyEventsItReadBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	for i := range 5 {
		k, run := data.Key{Account: "other", Session: fmt.Sprintf("s%d", i)}, uuid.New()
		if _, err := s.Acquire(ctx, k, run, time.Minute, "old"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Release(ctx, k, run); err != nil {
			t.Fatal(err)
		}
	}
	old := pgtest.History(t, s)

	p := startLeasetop(t, "demo", "--headless", "--duration", "12s", "--ttl", "2s", "--seed", "3", "--no-chaos", "--dsn", db.URL)
	account := p.waitFor(regexp.MustCompile(`online\s+\S+ pid \d+: (\S+), open on`), 60*time.Second)[1]
	p.waitFor(eventLine, 60*time.Second) // the demo's listener delivers
	var forged []data.Event
	for i, ev := range old {
		ev.Key.Account, ev.Holder = account, "REPLAYED-HOLDER"
		forged = append(forged, ev)
		ev.ID += 1_000_000 + int64(i)
		ev.Holder = "FORGED-HOLDER"
		forged = append(forged, ev)
	}
	shown := len(eventLine.FindAllString(p.stdout(), -1))
	pgtest.ConnectNobody(t, db).Notify(t, pgtest.Replays(t, forged, 3))
	pgtest.Eventually(t, 30*time.Second, "the demo's own events after the forged ones", func() bool {
		return len(eventLine.FindAllString(p.stdout(), -1)) > shown
	})
	if code := p.wait(90 * time.Second); code != 0 {
		t.Fatalf("leasetop demo --headless exited %d, want 0\nstdout:\n%s\nstderr:\n%s", code, p.stdout(), p.stderr.String())
	}
	for _, label := range []string{"REPLAYED-HOLDER", "FORGED-HOLDER"} {
		if n := strings.Count(p.stdout(), label); n > 0 {
			t.Errorf("the stream shows %q %d times, want never:\n%s", label, n, p.stdout())
		}
	}
}
