package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/internal/testkit/syncbuf"
)

// eventRef is one event of one context: ids are each database's own.
type eventRef struct {
	context string
	id      int64
}

// churn acquires and releases n sessions named prefix-i on conn.
func churn(t *testing.T, conn *pgx.Conn, prefix string, n int) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		run := uuid.New()
		if _, err := conn.Exec(ctx, `SELECT lease.acquire('acme', $1, $2, '1 min', 'dev')`, fmt.Sprintf("%s-%d", prefix, i), run); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, `SELECT lease.release('acme', $1, $2)`, fmt.Sprintf("%s-%d", prefix, i), run); err != nil {
			t.Fatal(err)
		}
	}
}

// allEvents is every event id of conn's database, as eventRefs of context.
func allEvents(t *testing.T, conn *pgx.Conn, context_ string) []eventRef {
	t.Helper()
	rows, err := conn.Query(context.Background(), `SELECT id FROM lease.event ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	out := make([]eventRef, len(ids))
	for i, id := range ids {
		out[i] = eventRef{context_, id}
	}
	return out
}

// printedEvents parses events --json's lines: each event's context and id,
// and how many times each was printed.
func printedEvents(t *testing.T, out string) map[eventRef]int {
	t.Helper()
	got := map[eventRef]int{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var ev struct {
			Context string `json:"context"`
			ID      int64  `json:"id"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("not a JSON event: %q: %v", line, err)
		}
		got[eventRef{ev.Context, ev.ID}]++
	}
	return got
}

// waitOutput waits until cond holds of what the command printed, or fails
// saying what it printed.
func waitOutput(t *testing.T, what string, out, errOut *syncbuf.Buffer, cond func(stdout, stderr string) bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond(out.String(), errOut.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: stdout:\n%s\nstderr:\n%s", what, out.String(), errOut.String())
		}
		time.Sleep(50 * time.Millisecond) // polling a condition, bounded by the deadline
	}
}

// events --follow across three PostgreSQL servers prints every transition
// of each exactly once, tagged with its context, while one of them is
// stopped and started again: its history and the others' go on, and when
// it is back its events come again, none repeated, none missed.
func TestEventsFollowAcrossContexts(t *testing.T) {
	t.Parallel()
	eu := pgtest.New(t)
	usSrv, us := pgtest.OtherServer(t, "us_app")
	_, ap := pgtest.OtherServer(t, "ap_app")
	conns := map[string]*pgx.Conn{"eu": eu.Conn(t), "us": us.Conn(t), "ap": ap.Conn(t)}
	for name, conn := range conns {
		churn(t, conn, "before-"+name, 2)
	}
	cfg := contextConfig(t, "", "eu", eu.URL, "us", us.URL, "ap", ap.URL)

	ctx, cancel := context.WithCancel(context.Background())
	var (
		out, errOut syncbuf.Buffer
		wg          sync.WaitGroup
	)
	wg.Go(func() {
		if err := run(ctx, "", &out, &errOut, "events", "--config", cfg, "--context", "all", "--follow", "--json"); err != nil && ctx.Err() == nil {
			t.Errorf("events --follow: %v", err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	live := func(name string, n int) func(string, string) bool {
		return func(_, stderr string) bool {
			return strings.Count(stderr, "leasetop: context "+name+": following events live") >= n
		}
	}
	for _, name := range []string{"eu", "us", "ap"} {
		waitOutput(t, name+" live", &out, &errOut, live(name, 1))
	}
	for name, conn := range conns {
		churn(t, conn, "live-"+name, 5)
	}

	// us stops: eu and ap go on; us comes back by itself.
	conns["us"].Close(context.Background())
	usSrv.Stop()
	waitOutput(t, "us's connection lost", &out, &errOut, func(_, stderr string) bool {
		return strings.Contains(stderr, "leasetop: context us: connection lost, reconnecting")
	})
	churn(t, conns["eu"], "while-us-down-eu", 5)
	churn(t, conns["ap"], "while-us-down-ap", 5)
	if err := usSrv.Restart(context.Background()); err != nil {
		t.Fatalf("restart us: %v", err)
	}
	waitOutput(t, "us live again", &out, &errOut, live("us", 2))
	conns["us"] = us.Conn(t)
	for name, conn := range conns {
		churn(t, conn, "after-"+name, 5)
	}

	var want []eventRef
	for name, conn := range conns {
		want = append(want, allEvents(t, conn, name)...)
	}
	waitOutput(t, "every event of the three databases", &out, &errOut, func(stdout, _ string) bool {
		got := printedEvents(t, stdout)
		for _, w := range want {
			if got[w] == 0 {
				return false
			}
		}
		return true
	})
	cancel()
	wg.Wait()
	got := printedEvents(t, out.String())
	wanted := map[eventRef]bool{}
	for _, w := range want {
		wanted[w] = true
	}
	for ref, n := range got {
		switch {
		case !wanted[ref]:
			t.Errorf("printed %s's event %d, which its database does not have", ref.context, ref.id)
		case n != 1:
			t.Errorf("printed %s's event %d %d times, want once", ref.context, ref.id, n)
		}
	}
	if len(want) != 2*3*(2+5+5)+2*2*5 {
		t.Errorf("the databases have %d events, want %d: the test made other transitions than it meant", len(want), 2*3*(2+5+5)+2*2*5)
	}
}
