package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/leasetop/leasetop/lease"
)

// queueForRun is --on-busy queue: the lease is held (held says by whom), so
// run takes a ticket in the session's queue and waits for its turn. A full
// queue exits 3, as a refusal.
func queueForRun(ctx context.Context, env Env, client *lease.Client, permit lease.Permit, held *lease.HeldError) (*lease.Lease, error) {
	fmt.Fprintf(env.Stderr, "leasetop: queueing: %s\n", heldMessage(held))
	l, err := client.Queue(ctx, permit)
	if err == nil {
		return l, nil
	}
	if errors.Is(err, lease.ErrQueueFull) {
		return nil, &ExitError{Code: ExitBusy, Err: fmt.Errorf("%s; the queue is full", heldMessage(held))}
	}
	return nil, connError(err)
}
