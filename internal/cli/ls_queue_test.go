package cli_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/data"
	"github.com/leasetop/leasetop/internal/pgtest"
)

// TestLsJSONQueues: ls --json gives each lease its queue's length and lists
// every session's queue, also one whose lease is free (reserved for the
// queue's head); a lease_reader may run it.
func TestLsJSONQueues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
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
