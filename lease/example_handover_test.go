package lease_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/leasetop/leasetop/data"
	"github.com/leasetop/leasetop/lease"
)

// "Continue on this device": the phone asks the desktop's run to hand the
// conversation over. The desktop finishes what it must, then hands over in
// one transaction: the phone holds the lease with a higher fence, and
// nobody could take it in between.
func ExampleClient_Ask() {
	dsn, drop := exampleDatabase()
	defer drop()
	ctx := context.Background()
	store, _ := data.Open(ctx, dsn)
	defer store.Close()
	client, _ := lease.New(store, lease.Config{TTL: 3 * time.Second})
	defer client.Close()
	allow := lease.AuthorizerFunc(func(context.Context, lease.Request) error { return nil })
	key := lease.Key{Account: "acme", Session: "chat-42"}

	pd, _ := client.Authorize(ctx, allow, key, "desktop")
	desktop, _ := client.Try(ctx, pd)
	go func() {
		ask := <-desktop.Asked() // at the desktop's next renewal (every TTL/3) at the latest
		fmt.Printf("desktop: asked by %q\n", ask.Holder)
		// ... stop the work at a safe point, then:
		if err := desktop.HandOver(ctx); err != nil {
			fmt.Println(err)
		}
	}()

	pp, _ := client.Authorize(ctx, allow, key, "phone")
	phone, err := client.Ask(ctx, pp, 10*time.Second, lease.BusyRefuse)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer phone.Release(ctx)
	fmt.Printf("phone holds it, fence higher: %v\n", phone.Fence() > desktop.Fence())
	<-desktop.Done()
	fmt.Println("desktop handed over:", errors.Is(desktop.Err(), lease.ErrHandedOver))
	// Output:
	// desktop: asked by "phone"
	// phone holds it, fence higher: true
	// desktop handed over: true
}
