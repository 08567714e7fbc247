package lease

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/data"
)

// A waiter refused by a holder whose lease ends before the next poll wakes
// a few milliseconds after that end, never a fraction of the TTL later; one
// whose holder has longer to go polls at PollInterval with jitter.
func TestRetryDelayAfterExpiry(t *testing.T) {
	t.Parallel()
	c := &Client{cfg: Config{PollInterval: 2 * time.Second}}
	run := uuid.New()
	for _, tc := range []struct {
		remaining time.Duration
		lo, hi    time.Duration // the delay's bounds, inclusive
	}{
		{0, expiryDelay, expiryDelay + expiryJitter},
		{300 * time.Millisecond, 300*time.Millisecond + expiryDelay, 300*time.Millisecond + expiryDelay + expiryJitter},
		{1999 * time.Millisecond, 1999*time.Millisecond + expiryDelay, 1999*time.Millisecond + expiryDelay + expiryJitter},
		{3 * time.Second, 2 * time.Second, 2400 * time.Millisecond},
	} {
		t.Run(fmt.Sprint(tc.remaining), func(t *testing.T) {
			held := fmt.Errorf("acquire: %w", &data.HeldError{RunID: run, Remaining: tc.remaining})
			for range 1000 {
				failures := 3
				d, retry := c.retryDelay(held, &failures)
				if !retry || d < tc.lo || d > tc.hi || failures != 0 {
					t.Fatalf("retryDelay(held, remaining %v) = %v, %v (failures %d); want a retry in [%v, %v], failures reset",
						tc.remaining, d, retry, failures, tc.lo, tc.hi)
				}
			}
		})
	}
}
