package data_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/pgserver"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestNotificationsThroughPooler: through a real PgBouncer in transaction
// mode, with three stores sharing two server connections, the notification
// each acquire and release sends after its commit (sqlcall.NotifyPending,
// from the payload kept in the session) arrives for every transition. The call
// and its notification go to PgBouncer in one write, as two transactions:
// were the second run on another server connection, it would find no
// payload there and send nothing (listeners would learn of it only from
// their catch-up read a second later).
func TestNotificationsThroughPooler(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	via := db.Via(t, pgtest.Bouncer(t, pgserver.BouncerOptions{PoolSize: 2}))
	drain := collect(t, db.Conn(t), db.Conn(t))
	const stores, rounds = 3, 20
	var wg sync.WaitGroup
	errs := make(chan error, stores)
	for i := range stores {
		s := pgtest.OpenStore(t, via, data.Options{})
		wg.Go(func() {
			for r := range rounds {
				k := data.Key{Account: "pooled", Session: fmt.Sprintf("s%d-%d", i, r)}
				run := uuid.New()
				if _, err := s.Acquire(ctx, k, run, time.Minute, "pooled"); err != nil {
					errs <- fmt.Errorf("store %d acquire: %w", i, err)
					return
				}
				if ok, err := s.Release(ctx, k, run); err != nil || !ok {
					errs <- fmt.Errorf("store %d release = %v, %w", i, ok, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, p := range drain() {
		for _, kind := range []string{"acquired", "released"} {
			if strings.Contains(p, `"kind":"`+kind+`"`) && strings.Contains(p, `"account_id":"pooled"`) {
				counts[kind]++
			}
		}
	}
	if want := stores * rounds; counts["acquired"] != want || counts["released"] != want {
		t.Errorf("through PgBouncer %d acquired and %d released notifications arrived, want %d each", counts["acquired"], counts["released"], want)
	}
}
