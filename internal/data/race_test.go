package data_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestSimultaneousAcquire races 16 independent connections for one key, 200
// rounds: even rounds for a fresh key, odd rounds for an expired lease. Every
// round must have exactly one winner, and it must be the run in the table.
func TestSimultaneousAcquire(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	stores := make([]*data.Store, 16)
	for i := range stores {
		stores[i] = db.Store(t) // each its own pool: independent connections
	}
	raceOneKey(t, stores, db.Conn(t), 200)
}

// raceOneKey races the stores for one key per round, even rounds for a
// fresh key and odd ones for an expired lease; conn reads the table.
func raceOneKey(t *testing.T, stores []*data.Store, conn *pgx.Conn, rounds int) {
	t.Helper()
	ctx := context.Background()
	racers := len(stores)
	for round := range rounds {
		k := data.Key{Account: "race", Session: fmt.Sprintf("s%d", round)}
		var prevFence int64
		if round%2 == 1 {
			g := mustAcquire(t, stores[0], k, uuid.New(), time.Millisecond)
			prevFence = g.Fence
			pgtest.WaitServerPast(t, conn, g.ExpiresAt)
		}
		runs := make([]uuid.UUID, racers)
		errs := make([]error, racers)
		grants := make([]data.Grant, racers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range racers {
			runs[i] = uuid.New()
			wg.Go(func() {
				<-start
				grants[i], errs[i] = stores[i].Acquire(ctx, k, runs[i], time.Minute, "racer")
			})
		}
		close(start)
		wg.Wait()
		winners := 0
		var winner uuid.UUID
		for i, err := range errs {
			switch {
			case err == nil:
				winners++
				winner = runs[i]
				if grants[i].Fence <= prevFence {
					t.Errorf("round %d: winner fence %d, want > %d", round, grants[i].Fence, prevFence)
				}
			case errors.Is(err, data.ErrHeld):
			default:
				t.Fatalf("round %d: Acquire err = %v, want nil or ErrHeld", round, err)
			}
		}
		if winners != 1 {
			t.Fatalf("round %d: %d winners, want exactly 1", round, winners)
		}
		if got, _, _ := leaseOf(t, conn, k); got != data.PublicRunID(winner) {
			t.Fatalf("round %d: table holds run %v, want winner %v", round, got, winner)
		}
	}
}
