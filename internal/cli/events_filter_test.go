package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/internal/testkit/syncbuf"
)

// eventIDs returns the ids at the start of events' text lines.
func eventIDs(out string) []int64 {
	var ids []int64
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var id int64
		if line != "" {
			fmt.Sscan(line, &id)
			ids = append(ids, id)
		}
	}
	return ids
}

// TestEventsFilters: each of events' filters narrows the history
// to what it names, alone and combined, by time on the database clock and
// with --since ID as before; --json prints the same events.
func TestEventsFilters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	acquire(t, conn, "acme", "s1", "1 min", "dev")                                                     // 1
	r2 := acquire(t, conn, "acme", "s2", "1 min", "dev")                                               // 2
	acquire(t, conn, "beta", "s1", "1 min", "dev")                                                     // 3
	if _, err := conn.Exec(ctx, `SELECT lease.force_release('acme', 's1', NULL, 'ops')`); err != nil { // 4
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `DELETE FROM lease.session_lease WHERE run_id = $1`, r2); err != nil { // 5: released
		t.Fatal(err)
	}
	acquire(t, conn, "acme", "s1", "1 min", "dev") // 6
	evs, err := db.Store(t).EventsSince(ctx, 0, 100)
	if err != nil || len(evs) != 6 {
		t.Fatalf("%d events (%v), want 6", len(evs), err)
	}
	at := func(i int) string { return evs[i-1].At.Format(time.RFC3339Nano) }
	tests := []struct {
		args    []string
		wantIDs []int64
	}{
		{[]string{"--account", "acme"}, []int64{1, 2, 4, 5, 6}},
		{[]string{"--account", "beta"}, []int64{3}},
		{[]string{"--account", "acme,beta"}, []int64{1, 2, 3, 4, 5, 6}},
		{[]string{"--account", "nobody"}, nil},
		{[]string{"--session", "s1"}, []int64{1, 3, 4, 6}},
		{[]string{"--account", "acme", "--session", "s1"}, []int64{1, 4, 6}},
		{[]string{"--kind", "released"}, []int64{5}},
		{[]string{"--kind", "acquired,force_released"}, []int64{1, 2, 3, 4, 6}},
		{[]string{"--kind", "force_released", "--kind", "released"}, []int64{4, 5}},
		{[]string{"--since", at(3)}, []int64{3, 4, 5, 6}},
		{[]string{"--until", at(3)}, []int64{1, 2}},
		{[]string{"--since", at(2), "--until", at(5)}, []int64{2, 3, 4}},
		{[]string{"--since", at(2), "--until", at(5), "--session", "s1"}, []int64{3, 4}},
		{[]string{"--since", "1h ago"}, []int64{1, 2, 3, 4, 5, 6}},
		{[]string{"--since", "0s ago"}, nil},
		{[]string{"--until", "1h ago"}, nil},
		{[]string{"--account", "acme", "--limit", "2"}, []int64{5, 6}},
		{[]string{"--since", at(2), "--limit", "2"}, []int64{2, 3}},
		{[]string{"--since", "2", "--session", "s1"}, []int64{3, 4, 6}},
		{[]string{"--since", "2", "--kind", "acquired", "--limit", "1"}, []int64{3}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, errOut, code := leasetop(ctx, db.URL, append([]string{"events"}, tt.args...)...)
			if code != 0 {
				t.Fatalf("code %d err %q", code, errOut)
			}
			if got := eventIDs(out); fmt.Sprint(got) != fmt.Sprint(tt.wantIDs) {
				t.Errorf("ids = %v, want %v\n%s", got, tt.wantIDs, out)
			}
			out, errOut, code = leasetop(ctx, db.URL, append([]string{"events", "--json"}, tt.args...)...)
			var got []int64
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				var ev struct {
					ID int64 `json:"id"`
				}
				if line == "" {
					continue
				}
				if err := json.Unmarshal([]byte(line), &ev); err != nil {
					t.Fatalf("--json line %q: %v", line, err)
				}
				got = append(got, ev.ID)
			}
			if code != 0 || fmt.Sprint(got) != fmt.Sprint(tt.wantIDs) {
				t.Errorf("--json: code %d err %q ids = %v, want %v", code, errOut, got, tt.wantIDs)
			}
		})
	}
}

// TestEventsFiltersRefuseBadInput: a time that is not one, an unknown
// kind, an empty account, --until with --follow or before --since: one
// line, exit 2, nothing printed.
func TestEventsFiltersRefuseBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	acquire(t, db.Conn(t), "acme", "s1", "1 min", "dev")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--since", "yesterday"}, `"yesterday" is not a time: want RFC 3339`},
		{[]string{"--until", "2026-13-01T00:00:00Z"}, "is not a time"},
		{[]string{"--since", "10 minutes ago"}, "is not a duration ago"},
		{[]string{"--since", "-5m ago"}, "is not a duration ago"},
		{[]string{"--since", "-3"}, "negative"},
		{[]string{"--kind", "stolen"}, `unknown kind "stolen": want one of acquired, taken_over, released, force_released, renew_rejected, truncated`},
		{[]string{"--kind", "acquired,renewed"}, `unknown kind "renewed"`},
		{[]string{"--account", ""}, "empty value"},
		{[]string{"--until", "1m ago", "--follow"}, "--until and --follow cannot go together"},
		{[]string{"--since", "2026-01-02T00:00:00Z", "--until", "2026-01-01T00:00:00Z"}, "is before --since"},
		{[]string{"--since", "1m ago", "--until", "2m ago"}, "is before --since"},
		{[]string{"--kind", "acquired\x1b[31m"}, `unknown kind "acquired\x1b[31m"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, errOut, code := leasetop(ctx, db.URL, append([]string{"events"}, tt.args...)...)
			if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, tt.want) || strings.Contains(errOut, "\x1b") {
				t.Errorf("code %d out %q err %q, want exit 2, nothing printed, one inert line with %q", code, out, errOut, tt.want)
			}
		})
	}
	out, errOut, code := leasetop(ctx, db.URL, "ls", "--at", "tomorrow")
	if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, `"tomorrow" is not a time`) {
		t.Errorf("ls --at tomorrow: code %d out %q err %q, want exit 2 and one line", code, out, errOut)
	}
	var inAnHour time.Time // on the server's clock, which ls --at is compared with
	if err := db.Conn(t).QueryRow(ctx, `SELECT clock_timestamp() + interval '1 hour'`).Scan(&inAnHour); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = leasetop(ctx, db.URL, "ls", "--at", inAnHour.UTC().Format(time.RFC3339))
	if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "after the server's clock") {
		t.Errorf("ls --at in an hour: code %d out %q err %q, want exit 2 and one line", code, out, errOut)
	}
}

// TestEventsFollowFiltered: --follow with --account prints the history and
// then the live events of that account only, each once.
func TestEventsFollowFiltered(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	conn := db.Conn(t)
	acquire(t, conn, "acme", "before", "1 min", "dev")
	acquire(t, conn, "beta", "before", "1 min", "dev")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncbuf.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, db.URL, &out, &errOut, "events", "--follow", "--account", "beta", "--since", "1h ago")
	}()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("stdout %q stderr %q", out.String(), errOut.String())
		}
	})
	contains := func(buf *syncbuf.Buffer, s string) func() bool {
		return func() bool { return strings.Contains(buf.String(), s) }
	}
	pgtest.Eventually(t, 20*time.Second, "the history", contains(&out, "beta/before"))
	pgtest.Eventually(t, 20*time.Second, "following events live", contains(&errOut, "following events live"))
	acquire(t, conn, "acme", "after", "1 min", "dev")
	acquire(t, conn, "beta", "after", "1 min", "dev")
	pgtest.Eventually(t, 20*time.Second, "the live event", contains(&out, "beta/after"))
	cancel()
	if err := <-done; err != nil {
		t.Errorf("events --follow returned %v after cancel, want nil", err)
	}
	if s := out.String(); strings.Contains(s, "acme/") || strings.Count(s, "beta/before") != 1 || strings.Count(s, "beta/after") != 1 {
		t.Errorf("events --follow --account beta printed:\n%s\nwant beta's two events once each, no acme", s)
	}
}
