package data_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestCheckHolderReadsWithoutWriting: CheckHolder, as a lease_app login,
// says a live holder still holds (with the ask pending for it), and after a
// preempt or a forced release that it does not, naming the event that ended
// it; a stale fence is not held either. It never writes an event.
func TestCheckHolderReadsWithoutWriting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	admin := db.Store(t)
	app, _ := pgtest.Login(t, db, "lease_app")
	s := pgtest.OpenStore(t, app, data.Options{})
	k := data.Key{Account: "acme", Session: "check"}
	run := uuid.New()
	g := mustAcquire(t, admin, k, run, time.Hour)
	asker := uuid.New()
	if _, err := admin.AskHandover(ctx, k, asker, time.Hour, "phone"); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		var n int
		if err := db.Pool(t).QueryRow(ctx, `SELECT count(*) FROM lease.event`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	check := func(fence int64) data.HolderCheck {
		t.Helper()
		before := count()
		c, err := s.CheckHolder(ctx, k, data.PublicRunID(run), fence)
		if err != nil {
			t.Fatalf("CheckHolder: %v", err)
		}
		if after := count(); after != before {
			t.Fatalf("CheckHolder wrote %d events", after-before)
		}
		return c
	}
	if c := check(g.Fence); !c.Held || c.Ask == nil || c.Ask.RunID != data.PublicRunID(asker) || c.Ending.ID != 0 {
		t.Errorf("live holder: %+v, want held with the phone's ask and no ending event", c)
	}
	if c := check(g.Fence + 1); c.Held || c.Ask != nil {
		t.Errorf("another fence: %+v, want not held", c)
	}
	p, err := admin.Preempt(ctx, k, uuid.New(), time.Hour, "phone", "moved", data.AcquireOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := check(g.Fence); c.Held || c.Ending.Kind != data.KindPreempted || c.Ending.Fence != p.Fence {
		t.Errorf("after a preempt: %+v, want not held, ended by the preempt to fence %d", c, p.Fence)
	}
	k2 := data.Key{Account: "acme", Session: "forced"}
	g2 := mustAcquire(t, admin, k2, run, time.Hour)
	if _, err := admin.ForceRelease(ctx, k2, data.PublicRunID(run), "operator"); err != nil {
		t.Fatal(err)
	}
	c, err := s.CheckHolder(ctx, k2, data.PublicRunID(run), g2.Fence)
	if err != nil || c.Held || c.Ending.Kind != data.KindForceReleased || c.Ending.Reason != "operator" {
		t.Errorf("after a forced release: %+v, %v; want not held, ended by the forced release", c, err)
	}
}
