package cli_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestLsJSONQueues: ls --json gives each lease its queue's length and lists
// every session's queue, also one whose lease is free (reserved for the
// queue's head); a lease_reader may run it.
func TestLsJSONQueues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	queuedSessions(t, db.Store(t), "")
	out, errOut, code := leasetop(ctx, db.ReaderURL(t), "ls", "--json")
	if code != 0 {
		t.Fatalf("ls --json: code %d err %q", code, errOut)
	}
	var got struct {
		Leases []struct {
			SessionID   string `json:"session_id"`
			QueueLength int    `json:"queue_length"`
		} `json:"leases"`
		Queues []struct {
			SessionID string `json:"session_id"`
			Length    int    `json:"length"`
		} `json:"queues"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("ls --json output is not JSON: %v\n%s", err, out)
	}
	if len(got.Leases) != 1 || got.Leases[0].SessionID != "held" || got.Leases[0].QueueLength != 2 {
		t.Errorf("leases = %+v, want held with queue_length 2", got.Leases)
	}
	if len(got.Queues) != 2 || got.Queues[0].SessionID != "free" || got.Queues[0].Length != 1 ||
		got.Queues[1].SessionID != "held" || got.Queues[1].Length != 2 {
		t.Errorf("queues = %+v, want free 1 and held 2", got.Queues)
	}
}

// queuedSessions makes acme/held (held by "desktop", two tickets queued)
// and acme/free (released with one ticket queued). With asker, acme/held
// also has an ask to hand over by that label, recorded before the tickets
// (an ask may not pass a queue).
func queuedSessions(t *testing.T, s *data.Store, asker string) {
	t.Helper()
	ctx := context.Background()
	held, free := data.Key{Account: "acme", Session: "held"}, data.Key{Account: "acme", Session: "free"}
	freeHolder := uuid.New()
	for _, k := range []data.Key{held, free} {
		run := uuid.New()
		if k == free {
			run = freeHolder
		}
		if _, err := s.Acquire(ctx, k, run, time.Minute, "desktop"); err != nil {
			t.Fatal(err)
		}
	}
	if asker != "" {
		if a, err := s.AskHandover(ctx, held, uuid.New(), time.Minute, asker); err != nil || a.Outcome != data.AskAsked {
			t.Fatalf("AskHandover = %+v, %v; want asked", a, err)
		}
	}
	for range 2 {
		if _, err := s.Enqueue(ctx, held, uuid.New(), time.Minute, "phone"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Enqueue(ctx, free, uuid.New(), time.Minute, "tablet"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Release(ctx, free, freeHolder); err != nil {
		t.Fatal(err)
	}
}

// TestLsTextShowsWhoWaits: plain ls has a WAITING column (the queue's length
// and a pending ask to hand over, the asker's label inert) and a row for a
// free session whose queue is about to take it; --account and --session
// filter the queues as they filter the leases. Before, only --json showed
// queues and asks, and listed every account's queues whatever the filter.
func TestLsTextShowsWhoWaits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	queuedSessions(t, s, "ph\u043ene")
	out, errOut, code := leasetop(ctx, db.ReaderURL(t), "ls")
	if code != 0 {
		t.Fatalf("ls: code %d err %q", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasSuffix(strings.TrimSpace(lines[0]), "WAITING") {
		t.Fatalf("ls printed %d lines, want a header ending in WAITING, held and free:\n%s", len(lines), out)
	}
	if !strings.Contains(lines[1], "held") || !strings.Contains(lines[1], `2 queued; ask by ph\u{43e}ne, `) {
		t.Errorf("held's line = %q, want its queue and the ask, the asker's look-alike label marked", lines[1])
	}
	if f := strings.Fields(lines[2]); len(f) != 5 || f[1] != "free" || f[2] != "free" || f[3] != "1" || f[4] != "queued" {
		t.Errorf("free's line = %q, want acme free free 1 queued", lines[2])
	}
	out, errOut, code = leasetop(ctx, db.ReaderURL(t), "ls", "--json", "--session", "held")
	if code != 0 || strings.Contains(out, `"free"`) || !strings.Contains(out, `"length": 2`) {
		t.Errorf("ls --json --session held: code %d err %q, want held's queue only:\n%s", code, errOut, out)
	}
}
