package data_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// Rewind: one session's events in a time range, and who held it at the
// instant of the first one.
func ExampleStore_OwnersAt() {
	// In your program: the DATABASE_URL of a database where `leasetop
	// migrate` ran; a lease_reader login is enough, on a standby too.
	dsn, drop, err := pgtest.NewURL()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer drop()
	ctx := context.Background()
	store, err := data.Open(ctx, dsn)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()

	key, run := data.Key{Account: "acme", Session: "chat-42"}, uuid.New()
	if _, err := store.Acquire(ctx, key, run, time.Minute, "worker-7"); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := store.Release(ctx, key, run); err != nil {
		fmt.Println(err)
		return
	}

	now, err := store.ServerTime(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	evs, err := store.EventsBetween(ctx, data.HistoryFilter{Keys: []data.Key{key}, Since: now.Add(-10 * time.Minute)})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, ev := range evs {
		fmt.Println(ev.Kind, ev.Key, ev.Holder)
	}
	owners, err := store.OwnersAt(ctx, evs[0].At, data.HistoryFilter{Keys: []data.Key{key}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, h := range owners.Holdings {
		fmt.Println("as of the acquire:", h.Key, h.Holder, h.TTL, "left", h.ExpiresAt.Sub(owners.At))
	}
	_, err = store.OwnersAt(ctx, evs[0].At.Add(-time.Second), data.HistoryFilter{})
	fmt.Println(errors.Is(err, data.ErrHistoryPruned))
	// Output:
	// acquired acme/chat-42 worker-7
	// released acme/chat-42 worker-7
	// as of the acquire: acme/chat-42 worker-7 1m0s left 1m0s
	// true
}
