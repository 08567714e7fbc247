package data_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

func TestReadSync(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	for i := range 5 {
		k := data.Key{Account: "a", Session: string(rune('p' + i))}
		mustAcquire(t, s, k, uuid.New(), time.Minute)
	}
	if _, err := s.ForceReleaseAny(ctx, data.Key{Account: "a", Session: "p"}, "test"); err != nil {
		t.Fatal(err)
	}
	all := events(t, s) // 5 acquired + 1 force_released
	if len(all) != 6 {
		t.Fatalf("events = %d, want 6", len(all))
	}
	tests := []struct {
		name          string
		q             data.SyncQuery
		wantAfter     int64
		wantFirst     int64
		wantN         int
		wantTruncated bool
	}{
		{"all", data.SyncQuery{After: 0}, 0, all[0].ID, 6, false},
		{"after", data.SyncQuery{After: all[3].ID}, all[3].ID, all[4].ID, 2, false},
		{"tail", data.SyncQuery{After: -1, Tail: 2}, all[5].ID - 2, all[4].ID, 2, false},
		{"limit keeps the newest", data.SyncQuery{After: 0, Limit: 4}, 0, all[2].ID, 4, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.ReadSync(ctx, tt.q)
			if err != nil {
				t.Fatalf("ReadSync(%+v) err = %v", tt.q, err)
			}
			if len(got.Leases) != 4 {
				t.Errorf("leases = %d, want 4", len(got.Leases))
			}
			if got.Clock.IsZero() {
				t.Error("clock not measured")
			}
			if got.After != tt.wantAfter || len(got.Events) != tt.wantN || got.Truncated != tt.wantTruncated {
				t.Fatalf("After, events, truncated = %d, %d, %v, want %d, %d, %v",
					got.After, len(got.Events), got.Truncated, tt.wantAfter, tt.wantN, tt.wantTruncated)
			}
			if got.Events[0].ID != tt.wantFirst {
				t.Errorf("first event id = %d, want %d (oldest first)", got.Events[0].ID, tt.wantFirst)
			}
		})
	}
}

func TestReadSyncEmptyDatabase(t *testing.T) {
	t.Parallel()
	s := pgtest.New(t).Store(t)
	got, err := s.ReadSync(context.Background(), data.SyncQuery{After: -1, Tail: 500})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Leases) != 0 || len(got.Events) != 0 || got.After != 0 || got.Clock.IsZero() {
		t.Errorf("ReadSync on empty = %+v, want no leases, no events, After 0 and a clock", got)
	}
}

func TestLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := pgtest.New(t).Store(t)
	k := data.Key{Account: "a", Session: "s"}
	if _, _, ok, err := s.Lease(ctx, k); ok || err != nil {
		t.Fatalf("Lease(unheld) = %v, %v, want false, nil", ok, err)
	}
	run := uuid.New()
	g := mustAcquire(t, s, k, run, time.Minute)
	l, clock, ok, err := s.Lease(ctx, k)
	if err != nil || !ok {
		t.Fatalf("Lease = %v, %v, want true, nil", ok, err)
	}
	if l.RunID != data.PublicRunID(run) || l.Fence != g.Fence || !l.ExpiresAt.Equal(g.ExpiresAt) || clock.IsZero() {
		t.Errorf("Lease = %+v, want run %v fence %d", l, run, g.Fence)
	}
}
