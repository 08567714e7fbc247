package lease_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/leasetop/leasetop/data"
	"github.com/leasetop/leasetop/lease"
)

// The phone preempts the desktop's run: it holds the session at once, and
// the desktop's Context ends with ErrPreempted, naming who and why. A
// holder that declared itself not preemptible is left alone. (The login
// must be a member of lease_preempt; here it is the database's owner.)
func ExampleClient_Preempt() {
	dsn, drop := exampleDatabase()
	defer drop()
	ctx := context.Background()
	store, _ := data.Open(ctx, dsn)
	defer store.Close()
	client, _ := lease.New(store, lease.Config{TTL: time.Second})
	defer client.Close()
	allow := lease.AuthorizerFunc(func(context.Context, lease.Request) error { return nil })
	key := lease.Key{Account: "acme", Session: "chat-42"}

	pd, _ := client.AuthorizeRequest(ctx, allow, lease.Request{Key: key, Holder: "desktop", Attachment: "stream-7"})
	desktop, _ := client.Try(ctx, pd)

	pp, _ := client.Authorize(ctx, allow, key, "phone")
	_, err := client.Try(ctx, pp)
	var held *lease.HeldError
	if errors.As(err, &held) {
		fmt.Printf("busy: %s writes %s, preemptible %v\n", held.Holder, held.Attachment, held.Preemptible)
	}
	phone, _ := client.Preempt(ctx, pp, "user moved to the phone")
	defer phone.Release(ctx)

	<-desktop.Context().Done() // at the desktop's next renewal
	var lost *lease.LostError
	cause := context.Cause(desktop.Context())
	if errors.As(cause, &lost) && errors.Is(cause, lease.ErrPreempted) {
		fmt.Printf("desktop preempted by %q: %s\n", lost.By.Holder, lost.By.Reason)
	}

	// A payment in progress says it must not be preempted.
	key2 := lease.Key{Account: "acme", Session: "checkout"}
	pc, _ := client.AuthorizeRequest(ctx, allow, lease.Request{Key: key2, Holder: "payment", NotPreemptible: true})
	payment, _ := client.Try(ctx, pc)
	defer payment.Release(ctx)
	pp2, _ := client.Authorize(ctx, allow, key2, "phone")
	_, err = client.Preempt(ctx, pp2, "impatient")
	fmt.Println(errors.Is(err, lease.ErrNotPreemptible), payment.Err())
	// Output:
	// busy: desktop writes stream-7, preemptible true
	// desktop preempted by "phone": user moved to the phone
	// true <nil>
}
