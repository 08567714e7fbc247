package cli_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestEventsShowTheHandOversOldHolder: a handed_over line names both runs
// and both labels, as a preempted line does (holder and prev_holder), in
// text and in JSON.
func TestEventsShowTheHandOversOldHolder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	holder, asker := uuid.New(), uuid.New()
	if _, err := conn.Exec(ctx, `SELECT lease.acquire('acme', 'chat', $1, '1 min', 'desktop')`, holder); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `SELECT lease.ask_handover('acme', 'chat', $1, '1 min', 'phone')`, asker); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `SELECT lease.hand_over('acme', 'chat', $1, '1 min')`, holder); err != nil {
		t.Fatal(err)
	}
	out, _, code := leasetop(ctx, db.URL, "events")
	want := "handed_over    acme/chat run=" + data.PublicRunID(asker).String() + " prev_run=" + data.PublicRunID(holder).String()
	if code != 0 || !strings.Contains(out, want) || !strings.Contains(out, `holder=phone prev_holder=desktop`) {
		t.Errorf("events text = %q, want the handed_over line with both runs and both labels", out)
	}
	out, _, code = leasetop(ctx, db.URL, "events", "--json")
	var last map[string]any
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || code != 0 {
		t.Fatalf("events --json last line %q: %v", lines[len(lines)-1], err)
	}
	if last["kind"] != "handed_over" || last["prev_holder"] != "desktop" || last["holder"] != "phone" {
		t.Errorf("events --json handed_over = %v, want holder phone and prev_holder desktop", last)
	}
}
