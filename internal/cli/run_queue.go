package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/termtext"
	"github.com/leasetop/leasetop/lease"
)

// queueForRun is --on-busy queue: the lease is held (held says by whom), so
// run takes a ticket in the session's queue and waits for its turn, saying
// on stderr, one plain line each time, how many tickets are ahead of its own
// when that changes. A full queue, a login that holds its share of it, and
// a ticket an operator cleared exit 3, as a refusal.
func queueForRun(ctx context.Context, env Env, client *lease.Client, permit lease.Permit, busy string, shown int) (*lease.Lease, error) {
	fmt.Fprintf(env.Stderr, "leasetop: queueing: %s\n", busy) // shown: the place it says
	l, err := client.Queue(ctx, permit, lease.OnPlace(func(ahead int) {
		if ahead != shown {
			shown = ahead
			fmt.Fprintf(env.Stderr, "leasetop: queued: %d ahead\n", ahead)
		}
	}))
	var cleared *data.TicketClearedError
	switch {
	case err == nil:
		return l, nil
	case errors.As(err, &cleared):
		return nil, &ExitError{Code: ExitBusy, Err: errors.New(termtext.Clean(cleared.Message, 0))}
	case errors.Is(err, data.ErrQueueShareFull):
		return nil, &ExitError{Code: ExitBusy, Err: fmt.Errorf("%s; this login holds its share of the queue already (%d of its %d tickets)",
			busy, data.QueueShare, data.QueueLimit)}
	case errors.Is(err, lease.ErrQueueFull):
		return nil, &ExitError{Code: ExitBusy, Err: fmt.Errorf("%s; the queue is full", busy)}
	}
	return nil, connError(err)
}
