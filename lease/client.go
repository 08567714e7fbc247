package lease

import (
	"sync"

	"github.com/leasetop/leasetop/internal/data"
)

// Client competes for and keeps leases on one database. Create one per
// process (it is safe for concurrent use) and Close it when done: Close
// stops the notification listener that waiting acquisitions and held leases
// share (see Lease.Context). It does not release leases; release each one
// after its work has returned.
type Client struct {
	store   *data.Store
	cfg     Config
	renewer *renewer // batches the leases' renewals

	notes *notifier // the listener shared by waiters and holders, run while either exists

	// ackCalls bounds the acknowledgement calls of all the Client's
	// leases under way at once (inbox.go, sendAcks): half the store's
	// connections, at least one.
	ackCalls chan struct{}

	mu      sync.Mutex
	closed  bool
	wg      sync.WaitGroup // the listener and background cleanups
	closing chan struct{}  // closed by Close: background cleanups stop retrying within closeGrace
}

// New returns a Client on store with cfg (zero fields take their defaults).
// It returns an error (errors.Is(err, data.ErrInvalid)) for a Config that
// cannot work, for example a renew interval not shorter than TTL - margin.
func New(store *data.Store, cfg Config) (*Client, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Client{store: store, cfg: cfg, renewer: newRenewer(store, cfg), closing: make(chan struct{}),
		ackCalls: make(chan struct{}, ackCallsFor(store))}
	c.notes = newNotifier(store, cfg.Listener, resyncGap(cfg), &c.wg)
	return c, nil
}

// Config returns the configuration with its defaults filled in.
func (c *Client) Config() Config { return c.cfg }

// Close stops the shared listener and waits for the Client's background work
// (the listener and best-effort releases of grants whose replies were lost,
// which go on for a second at most once Close is called).
// Try, Wait and Do return ErrClosed afterwards, and waiting calls return
// ErrClosed. Close is idempotent.
func (c *Client) Close() {
	c.mu.Lock()
	if !c.closed {
		close(c.closing)
	}
	c.closed = true
	c.mu.Unlock()
	c.notes.close() // waiters see the Client closed and return; holders stop watching
	c.wg.Wait()
}

func (c *Client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}
