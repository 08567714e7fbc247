package lease_test

import (
	"context"
	"errors"
	"testing"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/lease"
)

func TestAuthorizeGatesCompeting(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	store := db.Store(t)
	c := newClient(t, store, lease.Config{})
	other := newClient(t, store, lease.Config{})
	ctx := context.Background()
	errNotMember := errors.New("not a member of acct")
	deny := lease.AuthorizerFunc(func(_ context.Context, r lease.Request) error {
		if r.Key.Account != "mine" {
			return errNotMember
		}
		return nil
	})

	if _, err := c.Authorize(ctx, deny, testKey, "h"); !errors.Is(err, lease.ErrDenied) || !errors.Is(err, errNotMember) {
		t.Errorf("Authorize(denied) err = %v, want ErrDenied wrapping the authorizer's error", err)
	}
	if _, err := c.Authorize(ctx, nil, testKey, "h"); err == nil {
		t.Error("Authorize(nil authorizer) err = nil, want an error")
	}
	if _, err := c.Authorize(ctx, allowAll, lease.Key{Account: "", Session: "s"}, "h"); !errors.Is(err, data.ErrInvalid) {
		t.Errorf("Authorize(empty account) err = %v, want ErrInvalid", err)
	}
	if _, err := c.Authorize(ctx, allowAll, testKey, "bad\x1bholder"); !errors.Is(err, data.ErrInvalid) {
		t.Errorf("Authorize(control character in holder) err = %v, want ErrInvalid", err)
	}

	foreign := permit(t, other, testKey, "h")
	for name, p := range map[string]lease.Permit{"zero Permit": {}, "another client's Permit": foreign} {
		if _, err := c.Try(ctx, p); !errors.Is(err, lease.ErrNoPermit) {
			t.Errorf("Try(%s) err = %v, want ErrNoPermit", name, err)
		}
		if _, err := c.Wait(ctx, p); !errors.Is(err, lease.ErrNoPermit) {
			t.Errorf("Wait(%s) err = %v, want ErrNoPermit", name, err)
		}
		called := false
		err := c.Do(ctx, p, lease.BusyRefuse, func(context.Context, *lease.Lease) error { called = true; return nil })
		if !errors.Is(err, lease.ErrNoPermit) || called {
			t.Errorf("Do(%s) err = %v, called = %v; want ErrNoPermit and not called", name, err, called)
		}
	}
	// Nothing above competed: no lease, no event.
	if got := holderOf(t, store, testKey); got.RunID != [16]byte{} {
		t.Errorf("lease held by %v after refused attempts, want none", got.RunID)
	}
	if evs, err := store.EventsFor(ctx, testKey, 10); err != nil || len(evs) != 0 {
		t.Errorf("EventsFor = %d events, err %v; want none", len(evs), err)
	}

	p, err := c.Authorize(ctx, deny, lease.Key{Account: "mine", Session: "s"}, "h")
	if err != nil {
		t.Fatalf("Authorize(allowed) err = %v", err)
	}
	if got, want := p.Request(), (lease.Request{Key: lease.Key{Account: "mine", Session: "s"}, Holder: "h"}); got != want {
		t.Errorf("Permit.Request() = %+v, want %+v", got, want)
	}
	acquire(t, c, p)
}
