package faults_test

import (
	"context"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/lease"
	"github.com/leasetop/leasetop/lease/leasetest"
)

// queueWaiters has one waiter per label queue for key on a Client of its own
// (on store), in the labels' order: each waiter's ticket is in (as read on
// direct) before the next queues. Each sends its label on the returned
// channel once granted, and releases at once.
func queueWaiters(t *testing.T, store, direct *data.Store, key lease.Key, labels ...string) <-chan string {
	t.Helper()
	ctx := context.Background()
	client, err := lease.New(store, lease.Config{TTL: 20 * time.Second, PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	allow := lease.AuthorizerFunc(func(context.Context, lease.Request) error { return nil })
	granted := make(chan string, len(labels))
	for i, label := range labels {
		p, err := client.Authorize(ctx, allow, key, label)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			l, err := client.Queue(ctx, p)
			if err != nil {
				granted <- "error: " + err.Error()
				return
			}
			granted <- label
			_ = l.Release(ctx)
		}()
		leasetest.WaitQueued(t, direct, key, i+1)
	}
	return granted
}

// grantOrder reads n grants from granted, in the order they came.
func grantOrder(t *testing.T, granted <-chan string, n int) []string {
	t.Helper()
	var order []string
	for range n {
		select {
		case g := <-granted:
			order = append(order, g)
		case <-time.After(time.Minute):
			t.Fatalf("granted so far: %v; the rest never were", order)
		}
	}
	return order
}
