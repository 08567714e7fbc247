package lease_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/lease"
)

// TestLimitPreemptByPriorityStopsTheVictim: in an account at its limit of
// one run, Preempt of another session by a run of a higher priority takes
// the slot of the account's run: the victim's Lease ends (a *LostError,
// ErrForceReleased, whose event names the preempt for a slot), its Release
// tells the preemptor that its work stopped (WaitPreempted returns), and a
// login without lease_preempt is refused with ErrPermission, writing
// nothing. Each client has its own connections.
func TestLimitPreemptByPriorityStopsTheVictim(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := pgtest.New(t)
	admin := db.Store(t)
	if _, err := admin.SetLimit(ctx, "acme", "", 1); err != nil {
		t.Fatal(err)
	}
	cfg := lease.Config{TTL: 30 * time.Second, PollInterval: time.Minute}
	victim := newClient(t, db.Store(t), cfg)
	lv := acquire(t, victim, permit(t, victim, lease.Key{Account: "acme", Session: "chat-1"}, "batch"))

	appDSN, _ := pgtest.Login(t, db, "lease_app")
	appStore, err := data.Open(ctx, appDSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(appStore.Close)
	app := newClient(t, appStore, cfg)
	urgent := lease.Request{Key: lease.Key{Account: "acme", Session: "chat-2"}, Holder: "urgent", Priority: 5}
	pa, err := app.AuthorizeRequest(ctx, allowAll, urgent)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.Preempt(ctx, pa, "page"); !errors.Is(err, data.ErrPermission) {
		t.Fatalf("Preempt by a lease_app login: %v, want ErrPermission", err)
	}
	if lv.Err() != nil {
		t.Fatalf("the victim lost its lease to a refused preempt: %v", lv.Err())
	}

	preemptor := newClient(t, db.Store(t), cfg)
	pp, err := preemptor.AuthorizeRequest(ctx, allowAll, urgent)
	if err != nil {
		t.Fatal(err)
	}
	lp, err := preemptor.Preempt(ctx, pp, "page")
	if err != nil {
		t.Fatalf("Preempt at priority 5 of a full account's priority-0 run: %v", err)
	}
	defer lp.Release(ctx)
	select {
	case <-lv.Done():
	case <-ctx.Done():
		t.Fatal("the victim's lease did not end")
	}
	var lost *lease.LostError
	if !errors.As(lv.Err(), &lost) || !errors.Is(lost.Reason, lease.ErrForceReleased) ||
		!strings.Contains(lost.By.Reason, "preempted for a slot by run "+lp.RunID().String()) {
		t.Fatalf("the victim's loss: %v, want a forced release naming the preempt for a slot", lv.Err())
	}
	waited := make(chan error, 1)
	go func() { waited <- lp.WaitPreempted(ctx) }()
	select {
	case err := <-waited:
		t.Fatalf("WaitPreempted returned %v before the victim released", err)
	case <-time.After(100 * time.Millisecond): // WaitPreempted polls every 20 to 200 ms: it had its chances
	}
	if err := lv.Release(ctx); err != nil && !errors.Is(err, lease.ErrForceReleased) && !errors.Is(err, lease.ErrLost) {
		t.Fatalf("the victim's Release: %v", err)
	}
	if err := <-waited; err != nil {
		t.Fatalf("WaitPreempted after the victim's Release: %v", err)
	}
}
