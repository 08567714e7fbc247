package lease

import (
	"time"

	"github.com/leasetop/leasetop/internal/data"
)

// HolderChecks returns how many holder-watch checks of c's leases the
// database has answered (watch.go).
func HolderChecks(c *Client) int64 { return c.notes.checks.Load() }

// NotifiedClaims returns how many of c's asks claimed their lease on the
// handed_over notification naming them (ask_claim.go).
func NotifiedClaims(c *Client) int64 { return c.notes.claims.Load() }

// ListenerStarts returns how many times c's notifier started (or
// restarted) its listener.
func ListenerStarts(c *Client) int64 { return c.notes.starts.Load() }

// NotifierReads returns how many read-backs of notifications c's notifier
// has made (one a batch that names a key it watches, or a truncation).
func NotifierReads(c *Client) int64 { return c.notes.reads.Load() }

// ResyncsAsked returns how many resyncs c's notifier was asked for (by its
// listener, or by a truncation read back), handed on or not.
func ResyncsAsked(c *Client) int64 { return c.notes.resyncsAsked.Load() }

// ReadBackKinds returns the kinds of the events of evs that c's notifier
// would read back (readback.go's wanted), in their order.
func ReadBackKinds(c *Client, evs []data.Event) []data.Kind {
	wanted, _ := c.notes.wanted(evs)
	kinds := make([]data.Kind, len(wanted))
	for i, ev := range wanted {
		kinds[i] = ev.Kind
	}
	return kinds
}

// SetListenerLinger sets how long c's listener outlives its last
// subscription, and its catch-up its last waiter (listenerLinger), before
// c subscribes to anything.
func SetListenerLinger(c *Client, d time.Duration) {
	c.notes.mu.Lock()
	defer c.notes.mu.Unlock()
	c.notes.linger = d
}

// ListenerCatchingUp reports whether c's listener runs and reads the
// catch-up.
func ListenerCatchingUp(c *Client) bool {
	c.notes.mu.Lock()
	defer c.notes.mu.Unlock()
	return c.notes.stop != nil && c.notes.catching
}

// ListenerRunning reports whether c's notifier runs a listener.
func ListenerRunning(c *Client) bool {
	c.notes.mu.Lock()
	defer c.notes.mu.Unlock()
	return c.notes.stop != nil
}
