package data_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestEventsPages reads histories around Events' page size (1000): every
// event after the starting id, once, in id order, across page boundaries,
// including a history that ends exactly on one.
func TestEventsPages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		events int   // acquired events written, ids 1..events
		after  int64 // where Events starts
	}{
		{events: 0, after: 0},
		{events: 5, after: 0},
		{events: 5, after: 5},
		{events: 1000, after: 0},
		{events: 2000, after: 0},
		{events: 2500, after: 0},
		{events: 2500, after: 700},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d events after %d", tt.events, tt.after), func(t *testing.T) {
			db := pgtest.New(t)
			s := db.Store(t)
			ctx := context.Background()
			if _, err := db.Conn(t).Exec(ctx, `
				SELECT lease.acquire('acct', 's' || g, gen_random_uuid(), interval '1 hour', 'h')
				  FROM generate_series(1, $1::int) g`, tt.events); err != nil {
				t.Fatalf("write %d events: %v", tt.events, err)
			}
			var ids []int64
			for ev, err := range s.Events(ctx, tt.after) {
				if err != nil {
					t.Fatalf("Events(%d) err = %v, want nil", tt.after, err)
				}
				ids = append(ids, ev.ID)
			}
			want := max(0, int64(tt.events)-tt.after)
			if int64(len(ids)) != want {
				t.Fatalf("Events(%d) yielded %d events, want %d", tt.after, len(ids), want)
			}
			for i, id := range ids {
				if wantID := tt.after + int64(i) + 1; id != wantID {
					t.Fatalf("Events(%d) event %d has id %d, want %d", tt.after, i, id, wantID)
				}
			}
		})
	}
}

// TestEventsStops checks that breaking out of the loop stops the reading
// and that a failed read is yielded, once, and ends the iteration.
func TestEventsStops(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	s := db.Store(t)
	ctx := context.Background()
	if _, err := db.Conn(t).Exec(ctx, `
		SELECT lease.acquire('acct', 's' || g, gen_random_uuid(), interval '1 hour', 'h')
		  FROM generate_series(1, 1500) g`); err != nil {
		t.Fatalf("write events: %v", err)
	}
	n := 0
	for _, err := range s.Events(ctx, 0) {
		if err != nil {
			t.Fatalf("Events err = %v, want nil", err)
		}
		if n++; n == 3 {
			break
		}
	}
	if n != 3 {
		t.Errorf("loop ran %d times, want 3", n)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	var errs []error
	for ev, err := range s.Events(cancelled, 0) {
		if err == nil {
			t.Fatalf("Events on a cancelled context yielded event %d, want an error", ev.ID)
		}
		errs = append(errs, err)
	}
	if len(errs) != 1 || !errors.Is(errs[0], context.Canceled) {
		t.Errorf("Events on a cancelled context yielded errors %v, want one context.Canceled", errs)
	}
}
