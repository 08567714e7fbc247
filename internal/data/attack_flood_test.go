package data_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestRejectedRenewalsCannotFlood logs in as a lease_app and renews what it
// never held: 200 random maximal keys, and a real live session 50 times with
// random run ids (fake zombies). Nothing may be written or notified. A real
// zombie, a run that held the key and lost it, is still recorded.
func TestRejectedRenewalsCannotFlood(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	owner := db.Store(t)
	victim := data.Key{Account: "acme", Session: "victim"}
	mustAcquire(t, owner, victim, uuid.New(), time.Minute)
	before := len(events(t, owner))

	app, login := connectAs(t, db, "lease_app")
	drain := collect(t, db.Conn(t), app)
	renew := func(k data.Key, run uuid.UUID) {
		t.Helper()
		var exp *time.Time
		if err := app.QueryRow(ctx, `SELECT lease.renew($1, $2, $3, '1 minute')`, k.Account, k.Session, run).Scan(&exp); err != nil || exp != nil {
			t.Fatalf("renew(%v) as %s = %v, %v; want NULL", k, login, exp, err)
		}
	}
	for i := range 200 {
		renew(data.Key{Account: fmt.Sprintf("%03d", i) + strings.Repeat("a", 509), Session: strings.Repeat("s", 512)}, uuid.New())
	}
	for range 50 {
		renew(victim, uuid.New())
	}
	if got := drain(); len(got) != 0 {
		t.Errorf("%d rejected renewals of leases %s never held sent %d notifications, want 0", 250, login, len(got))
	}
	if n := len(events(t, owner)) - before; n != 0 {
		t.Errorf("%d rejected renewals of leases %s never held wrote %d events, want 0", 250, login, n)
	}

	// A real zombie: it held the key, and an operator force-released it.
	k := data.Key{Account: "acme", Session: "zombie"}
	zombie := uuid.New()
	mustAcquire(t, owner, k, zombie, time.Minute)
	if ok, err := owner.ForceRelease(ctx, k, data.PublicRunID(zombie), "stuck"); err != nil || !ok {
		t.Fatalf("ForceRelease = %v, %v", ok, err)
	}
	drain() // acquired, force_released
	renew(k, zombie)
	evs, err := owner.EventsFor(ctx, k, 1)
	if err != nil || len(evs) != 1 || evs[0].Kind != data.KindRenewRejected || evs[0].RunID != data.PublicRunID(zombie) || evs[0].Reason != "no lease" {
		t.Fatalf("after the zombie's renewal the last event is %+v (%v), want its renew_rejected, no lease", evs, err)
	}
	if got := drain(); len(got) != 1 {
		t.Errorf("the zombie's rejected renewal sent %d notifications, want 1", len(got))
	}
}
