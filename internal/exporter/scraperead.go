package exporter

import (
	"context"
	"sync"
	"time"

	"github.com/leasetop/leasetop/internal/data"
)

// How a scrape-time read reaches the database: at most once a second,
// however often /metrics is fetched, and for at most two seconds.
const (
	queueUsageMaxAge  = time.Second
	queueUsageTimeout = 2 * time.Second
)

// scrapeRead is a value a Collector reads from the database when
// Prometheus scrapes (what no event follows: the NOTIFY queue's usage,
// tickets and messages that expire unobserved), at most once a second.
type scrapeRead[T any] struct {
	store func() *data.Store                            // nil until it opened
	read  func(*data.Store, context.Context) (T, error) // a method expression: (*data.Store).QueueStats

	mu   sync.Mutex // guards at and last; held while reading
	at   time.Time  // when last was read
	last T
}

// get returns the value, read now unless read within the last second. ok
// is false before the store opened and when the read failed: the gauges
// are then left out of that scrape (the feed's metrics say why).
func (r *scrapeRead[T]) get() (v T, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now := time.Now(); now.Sub(r.at) >= queueUsageMaxAge {
		store := r.store()
		if store == nil {
			return v, false
		}
		ctx, cancel := context.WithTimeout(context.Background(), queueUsageTimeout)
		got, err := r.read(store, ctx)
		cancel()
		if err != nil {
			return v, false
		}
		r.at, r.last = now, got
	}
	return r.last, true
}
