package data_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestForceReleaseAccounts releases every lease of the named accounts and
// no other, each recorded as a forced release with the reason.
func TestForceReleaseAccounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := pgtest.New(t).Store(t)
	mine := []data.Key{{"demo-1", "s1"}, {"demo-1", "s2"}, {"demo-2", "s1"}}
	theirs := data.Key{Account: "acme", Session: "s1"}
	for _, k := range append(slices.Clone(mine), theirs) {
		mustAcquire(t, s, k, uuid.New(), time.Minute)
	}
	last, err := s.LastEventID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n, err := s.ForceReleaseAccounts(ctx, []string{"demo-1", "demo-2", "demo-3"}, "cleanup")
	if err != nil || n != len(mine) {
		t.Fatalf("ForceReleaseAccounts = %d, %v; want %d, nil", n, err, len(mine))
	}
	snap, err := s.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Leases) != 1 || snap.Leases[0].Key != theirs {
		t.Errorf("leases after ForceReleaseAccounts = %+v, want only %v", snap.Leases, theirs)
	}
	var released []data.Key
	for ev, err := range s.Events(ctx, last) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind != data.KindForceReleased || ev.Reason != "cleanup" {
			t.Errorf("event %d = %s with reason %q, want force_released with reason cleanup", ev.ID, ev.Kind, ev.Reason)
		}
		released = append(released, ev.Key)
	}
	slices.SortFunc(released, func(a, b data.Key) int { return strings.Compare(a.String(), b.String()) })
	if !slices.Equal(released, mine) {
		t.Errorf("force-released %v, want %v", released, mine)
	}
	if n, err := s.ForceReleaseAccounts(ctx, []string{"demo-1"}, "again"); err != nil || n != 0 {
		t.Errorf("ForceReleaseAccounts again = %d, %v; want 0, nil", n, err)
	}
	if _, err := s.ForceReleaseAccounts(ctx, []string{"acme"}, "bad\x1breason"); !errors.Is(err, data.ErrInvalid) {
		t.Errorf("ForceReleaseAccounts with a control character in the reason: err = %v, want ErrInvalid", err)
	}
}

// TestSetNotifyRenewalsOnConn switches renewal notifications on a plain
// connection, as migrate does.
func TestSetNotifyRenewalsOnConn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s, conn := db.Store(t), db.Conn(t)
	for _, want := range []bool{true, false} {
		if err := data.SetNotifyRenewals(ctx, conn, want); err != nil {
			t.Fatalf("SetNotifyRenewals(conn, %t) = %v", want, err)
		}
		if on, err := s.NotifyRenewals(ctx); err != nil || on != want {
			t.Errorf("NotifyRenewals() after SetNotifyRenewals(conn, %t) = %t, %v; want %t", want, on, err, want)
		}
	}
}
