package monitor

import (
	"context"
	"sync"
	"time"

	"github.com/leasetop/leasetop/internal/data"
)

// A Context is one database of a monitor that watches several (k9s's word
// for a named cluster): its name, and how to reach it.
type Context struct {
	// Name names it, as Config.Contexts does.
	Name string
	// Open opens its store. Feeds calls it until it succeeds (OpenRetry
	// apart), so that a database that is down when the monitor starts comes
	// in when it is up, and closes the store when it stops. It must return
	// when ctx ends.
	Open func(ctx context.Context) (*data.Store, error)
	// Feed configures its Feed.
	Feed FeedConfig
}

// OpenRetry is how long Feeds waits between two attempts to open a
// context's store.
const OpenRetry = 2 * time.Second

// Feeds keeps a State of several contexts true: it runs a Feed for each
// context (once its store opens) and hands their batches to one consumer,
// each tagged with its context's index (Batch.Context). Like a Feed it never
// blocks on its consumer: each Feed keeps what it has for the consumer's
// next take, and overflows into a resync as it does alone. A context whose
// store has not opened yet is a batch of its own with no items, whose Conn
// says so (connecting, then reconnecting with the attempt and the error),
// so the consumer shows it down while the others keep coming. Feeds runs
// once.
type Feeds struct {
	contexts []Context

	wake chan struct{} // something may be pending
	done chan struct{} // Run returned

	mu      sync.Mutex
	feeds   []*Feed // nil until the context's store opened
	stores  []*data.Store
	opening []data.ListenerState // a context's state while its store does not open
	told    []bool               // the consumer has its opening state
	next    int                  // the context Next looks at first: each its turn
}

// NewFeeds returns the feeds of contexts. Start them with Run.
func NewFeeds(contexts []Context) *Feeds {
	n := len(contexts)
	f := &Feeds{
		contexts: contexts,
		wake:     make(chan struct{}, 1),
		done:     make(chan struct{}),
		feeds:    make([]*Feed, n),
		stores:   make([]*data.Store, n),
		opening:  make([]data.ListenerState, n),
		told:     make([]bool, n),
	}
	now := time.Now()
	for i := range f.opening {
		f.opening[i] = data.ListenerState{Status: data.ListenerConnecting, Since: now}
	}
	return f
}

// Run opens every context's store and runs its Feed until ctx is cancelled,
// then stops them, closes the stores and returns nil.
func (f *Feeds) Run(ctx context.Context) error {
	defer close(f.done)
	var wg sync.WaitGroup
	for i := range f.contexts {
		wg.Go(func() { f.runOne(ctx, i) })
	}
	wg.Wait()
	for _, s := range f.stores {
		if s != nil {
			s.Close()
		}
	}
	return nil
}

// Start runs the feeds in a goroutine until stop is called; stop cancels
// them and waits for Run to return.
func (f *Feeds) Start(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = f.Run(ctx) })
	return func() { cancel(); wg.Wait() }
}

// runOne opens context i's store, retrying, then runs its Feed and passes on
// its wake-ups until ctx ends.
func (f *Feeds) runOne(ctx context.Context, i int) {
	c := f.contexts[i]
	store := f.open(ctx, i)
	if store == nil {
		return
	}
	feed := NewFeed(store, c.Feed)
	f.mu.Lock()
	f.feeds[i], f.stores[i] = feed, store
	f.mu.Unlock()
	var wg sync.WaitGroup
	wg.Go(func() { _ = feed.Run(ctx) })
	for {
		select {
		case <-feed.ready:
			signal(f.wake)
		case <-feed.done:
			wg.Wait()
			signal(f.wake)
			return
		}
	}
}

// open calls context i's Open until it succeeds, with its failures as the
// context's opening state; nil once ctx ends.
func (f *Feeds) open(ctx context.Context, i int) *data.Store {
	since := time.Now()
	for attempt := 1; ; attempt++ {
		store, err := f.contexts[i].Open(ctx)
		if err == nil {
			return store
		}
		if ctx.Err() != nil {
			return nil
		}
		f.mu.Lock()
		f.opening[i] = data.ListenerState{Status: data.ListenerReconnecting, Since: since, Attempt: attempt, Err: err}
		f.told[i] = false
		f.mu.Unlock()
		signal(f.wake)
		t := time.NewTimer(OpenRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// Store returns context i's store, nil until it opened.
func (f *Feeds) Store(i int) *data.Store {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stores[i]
}

// Resync asks every context's feed to re-read its leases and recent events.
func (f *Feeds) Resync() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, fd := range f.feeds {
		if fd != nil {
			fd.Resync()
		}
	}
}

// Done is closed when Run has returned.
func (f *Feeds) Done() <-chan struct{} { return f.done }

// Next waits until a context has something pending and returns it as one
// batch of that context; the contexts take turns. It returns false once
// Run has returned and nothing is left.
func (f *Feeds) Next() (Batch, bool) {
	for {
		if b, ok := f.take(); ok {
			return b, true
		}
		select {
		case <-f.wake:
		case <-f.done:
			return f.take()
		}
	}
}

// take returns what the next context in turn has pending.
func (f *Feeds) take() (Batch, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.contexts)
	for j := range n {
		i := (f.next + j) % n
		var (
			b  Batch
			ok bool
		)
		if fd := f.feeds[i]; fd != nil {
			b, ok = fd.take()
		} else if !f.told[i] {
			b, ok, f.told[i] = Batch{Conn: f.opening[i]}, true, true
		}
		if ok {
			b.Context, f.next = i, i+1
			return b, true
		}
	}
	return Batch{}, false
}
