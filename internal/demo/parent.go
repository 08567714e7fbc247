package demo

import (
	"context"
	"os"
	"sync"
	"time"
)

// WithParent returns a context that is cancelled when this process's parent
// dies (the process is re-parented), checked every 250 ms. A device uses it
// beside the parent-death signal, which Linux ties to the thread that forked
// the device rather than to the demo process. stop ends the watch and waits
// for it.
func WithParent(ctx context.Context) (_ context.Context, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	parent := os.Getppid()
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if os.Getppid() != parent {
					cancel()
					return
				}
			}
		}
	})
	return ctx, func() { cancel(); wg.Wait() }
}
