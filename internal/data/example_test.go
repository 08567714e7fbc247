package data_test

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// Read the whole event history, oldest first; Events reads it a page at a
// time as the loop goes.
func ExampleStore_Events() {
	// In your program: the DATABASE_URL of a database where `leasetop
	// migrate` ran.
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

	for ev, err := range store.Events(ctx, 0) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(ev.ID, ev.Kind, ev.Key, ev.Holder)
	}
	// Output:
	// 1 acquired acme/chat-42 worker-7
	// 2 released acme/chat-42 worker-7
}
