package lease_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/leasetop/leasetop/data"
	"github.com/leasetop/leasetop/lease"
)

// Waiters that queue are granted the lease in the order they queued, and
// nobody can jump the queue: a Try is refused with its place.
func ExampleClient_Queue() {
	dsn, drop := exampleDatabase()
	defer drop()
	ctx := context.Background()
	store, _ := data.Open(ctx, dsn)
	defer store.Close()
	client, _ := lease.New(store, lease.Config{TTL: 30 * time.Second})
	defer client.Close()
	allow := lease.AuthorizerFunc(func(context.Context, lease.Request) error { return nil })
	key := lease.Key{Account: "acme", Session: "chat-42"}

	pa, _ := client.Authorize(ctx, allow, key, "desktop")
	a, _ := client.Try(ctx, pa)

	var wg sync.WaitGroup
	queue := func(device string, queued int) {
		p, _ := client.Authorize(ctx, allow, key, device)
		wg.Go(func() {
			l, err := client.Queue(ctx, p) // takes a ticket and keeps it alive
			if err != nil {
				fmt.Println(err)
				return
			}
			fmt.Printf("%s holds it\n", device)
			l.Release(ctx)
		})
		waitQueueLength(ctx, store, key, queued) // so that the order is known
	}
	queue("phone", 1)
	queue("tablet", 2)

	pw, _ := client.Authorize(ctx, allow, key, "watch")
	_, err := client.Try(ctx, pw)
	var held *lease.HeldError
	if errors.As(err, &held) {
		fmt.Printf("watch refused: held by %s, queued: %d ahead\n", held.Holder, held.Queued)
	}

	a.Release(ctx) // the phone is first, then the tablet
	wg.Wait()
	// Output:
	// watch refused: held by desktop, queued: 2 ahead
	// phone holds it
	// tablet holds it
}
