package lease

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
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
				b := backoff{failures: 3}
				d, retry := c.retryDelay(held, &b)
				if !retry || d < tc.lo || d > tc.hi || b.failures != 0 {
					t.Fatalf("retryDelay(held, remaining %v) = %v, %v (failures %d); want a retry in [%v, %v], failures reset",
						tc.remaining, d, retry, b.failures, tc.lo, tc.hi)
				}
			}
		})
	}
}

// A read-only server ends a waiting loop that no writable server has
// answered yet (it was pointed at a standby, where it would wait for ever)
// and is retried, as a failover in progress, once one has.
func TestRetryDelayReadOnly(t *testing.T) {
	t.Parallel()
	c := &Client{cfg: Config{PollInterval: 2 * time.Second}}
	readOnly := fmt.Errorf("acquire: %w: cannot execute INSERT in a read-only transaction", data.ErrReadOnly)
	var b backoff
	if _, retry := c.retryDelay(readOnly, &b); retry {
		t.Errorf("retryDelay(read-only) before any answer retries; want it refused, as on a standby")
	}
	if _, retry := c.retryDelay(&data.HeldError{RunID: uuid.New(), Remaining: time.Second}, &b); !retry {
		t.Fatal("retryDelay(held) does not retry")
	}
	if d, retry := c.retryDelay(readOnly, &b); !retry || d <= 0 || b.failures != 1 {
		t.Errorf("retryDelay(read-only) after an answer = %v, %v (failures %d); want a backoff retry, as in a failover", d, retry, b.failures)
	}
}
