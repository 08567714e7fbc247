package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/internal/testkit/syncbuf"
)

func TestEventsHistory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	for i := range 5 {
		acquire(t, conn, "acme", fmt.Sprintf("s%d", i), "1 min", "dev")
	}
	if _, err := conn.Exec(ctx, `SELECT lease.force_release('acme', 's0', NULL, 'operator said so')`); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args    []string
		wantIDs []int64
	}{
		{[]string{"events"}, []int64{1, 2, 3, 4, 5, 6}},
		{[]string{"events", "--limit", "2"}, []int64{5, 6}},
		{[]string{"events", "--since", "3"}, []int64{4, 5, 6}},
		{[]string{"events", "--since", "3", "--limit", "1"}, []int64{4}},
		{[]string{"events", "--since", "6"}, nil},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, errOut, code := leasetop(ctx, db.URL, tt.args...)
			if code != 0 {
				t.Fatalf("code %d err %q", code, errOut)
			}
			var got []int64
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				var id int64
				if line != "" {
					fmt.Sscan(line, &id)
					got = append(got, id)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.wantIDs) {
				t.Errorf("ids = %v, want %v\n%s", got, tt.wantIDs, out)
			}
		})
	}
	out, _, _ := leasetop(ctx, db.URL, "events", "--since", "5")
	if want := `force_released acme/s0 run=`; !strings.Contains(out, want) || !strings.Contains(out, `reason="operator said so"`) || !strings.Contains(out, "actor=postgres") {
		t.Errorf("force_released line = %q, want %q with actor and quoted reason", out, want)
	}
	out, _, _ = leasetop(ctx, db.URL, "events", "--json", "--since", "5")
	var ev struct {
		ID        int64      `json:"id"`
		Kind      string     `json:"kind"`
		Reason    *string    `json:"reason"`
		PrevRunID *uuid.UUID `json:"prev_run_id"`
		Actor     string     `json:"actor"`
	}
	if err := json.Unmarshal([]byte(out), &ev); err != nil || ev.ID != 6 || ev.Kind != "force_released" || ev.Reason == nil ||
		*ev.Reason != "operator said so" || ev.PrevRunID != nil || ev.Actor == "" {
		t.Errorf("events --json = %s (%v), want event 6 with its reason and a null prev_run_id", out, err)
	}
}

func TestEventsFollow(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	conn := db.Conn(t)
	acquire(t, conn, "acme", "before", "1 min", "dev")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncbuf.Buffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, db.URL, &out, &errOut, "events", "--follow") }()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("stdout %q stderr %q", out.String(), errOut.String())
		}
	})
	contains := func(buf *syncbuf.Buffer, s string) func() bool {
		return func() bool { return strings.Contains(buf.String(), s) }
	}
	pgtest.Eventually(t, 20*time.Second, "the history", contains(&out, "acme/before"))
	pgtest.Eventually(t, 20*time.Second, "following events live", contains(&errOut, "following events live"))
	acquire(t, conn, "acme", "after", "1 min", "dev")
	pgtest.Eventually(t, 20*time.Second, "the live event", contains(&out, "acme/after"))
	cancel()
	if err := <-done; err != nil {
		t.Errorf("events --follow returned %v after cancel, want nil", err)
	}
	if n := strings.Count(out.String(), "acme/before"); n != 1 {
		t.Errorf("the history event was printed %d times, want once:\n%s", n, out.String())
	}
}
