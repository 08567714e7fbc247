package ui

import (
	"context"
	"errors"
	"io"
	"strconv"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// Options configure Run and NewProgram. Zero fields take the documented
// defaults.
//
// The embedded Config configures the model as for New, except that its
// Source is set from Store and, when empty, its Database from the store's
// connection. With ReadOnly the monitor needs only SELECT on the lease schema
// (role lease_reader).
type Options struct {
	Config
	// Store is the database to watch. Required.
	Store *data.Store
	// Feed configures the monitor's feed.
	Feed monitor.FeedConfig
	// HistoryLimit is how many events the detail view shows. Default 200.
	HistoryLimit int
	// Input and Output are the terminal. Default os.Stdin and os.Stdout.
	Input  io.Reader
	Output io.Writer
	// Environ is the environment for terminal and colour detection.
	// Default os.Environ().
	Environ []string
	// NoColor turns colours off (the NO_COLOR convention: any non-empty
	// value).
	NoColor bool
}

// FrameRate is the most frames a second the monitor's program draws
// (Bubble Tea's default is 60). Bubble Tea's renderer wakes up this often
// even when nothing changed; on its own the screen changes only with the
// countdown tick, four times a second. At 60 those idle wake-ups alone cost
// 1.2-2.0 % of a core on the benchmark machine (docs/BENCHMARKS.md), at 30
// about 0.6 %, and a key press is still drawn within 33 ms.
const FrameRate = 30

// Run opens the monitor on opt.Store and returns when the user quits or ctx
// ends (then it returns nil). It starts the feed, runs the program, and
// stops the feed before it returns.
func Run(ctx context.Context, opt Options) error {
	p, err := NewProgram(ctx, opt)
	if err != nil {
		return err
	}
	return p.Run(ctx, p.Model())
}

// storeSource is the Source of a monitor on store: the feed's batches,
// the history and, unless read-only, forced release and clearing a queue. ctx bounds every call.
func storeSource(ctx context.Context, store *data.Store, feed *monitor.Feed, readOnly bool, historyLimit int) Source {
	if historyLimit <= 0 {
		historyLimit = 200
	}
	src := Source{
		NextFunc:   feed.Next,
		ResyncFunc: feed.Resync,
		HistoryFunc: func(key data.Key) ([]data.Event, error) {
			return store.EventsFor(ctx, key, historyLimit)
		},
		LockersFunc: func(key data.Key) ([]data.Locker, error) {
			return store.Lockers(ctx, key)
		},
		QueuesFunc:  func() (map[data.Key]int, error) { return store.QueueLengths(ctx) },
		QueueFunc:   func(key data.Key) ([]data.Ticket, error) { return store.QueueOf(ctx, key) },
		AsksFunc:    func() (map[data.Key]data.PendingAsk, error) { return store.PendingAsks(ctx) },
		InboxesFunc: func() (map[data.Key]data.Inbox, error) { return store.Inboxes(ctx) },
	}
	src.TimelineFunc, src.OwnersAtFunc = storeTimeline(ctx, store)
	if !readOnly {
		src.ReleaseFunc = func(key data.Key, run uuid.UUID, reason string) (ReleaseResult, error) {
			return forceRelease(ctx, store, key, run, reason)
		}
		src.ClearQueueFunc = func(key data.Key, reason string) (int, error) {
			return clearQueue(ctx, store, key, reason)
		}
	}
	return src
}

// clearQueue clears key's queue, with the role it needs named when the
// login lacks it.
func clearQueue(ctx context.Context, store *data.Store, key data.Key, reason string) (int, error) {
	n, err := store.ClearQueue(ctx, key, reason)
	switch {
	case errors.Is(err, data.ErrPermission):
		return 0, errors.New("permission denied: clearing a queue needs role lease_admin (or watch with --read-only)")
	case errors.Is(err, data.ErrReadOnly):
		return 0, errors.New("the server is a hot standby: clearing a queue needs the primary (or watch with --read-only)")
	}
	return n, err
}

// forceRelease releases key's lease if run still holds it; when nothing was
// released it reads who holds the lease now, for the status line.
func forceRelease(ctx context.Context, store *data.Store, key data.Key, run uuid.UUID, reason string) (ReleaseResult, error) {
	ok, err := store.ForceRelease(ctx, key, run, reason)
	if errors.Is(err, data.ErrPermission) {
		return ReleaseResult{}, errors.New("permission denied: forced release needs role lease_admin (or watch with --read-only)")
	}
	if errors.Is(err, data.ErrReadOnly) {
		return ReleaseResult{}, errors.New("the server is a hot standby: forced release needs the primary (or watch with --read-only)")
	}
	if err != nil || ok {
		return ReleaseResult{Released: ok}, err
	}
	now, _, held, err := store.Lease(ctx, key)
	if err != nil {
		return ReleaseResult{}, nil // nothing was released either way; the holder is unknown
	}
	return ReleaseResult{Now: now, Held: held}, nil
}

// DatabaseLabel names the store's database for the header: host:port/db,
// never the password.
func DatabaseLabel(store *data.Store) string {
	cfg := store.Pool().Config().ConnConfig
	return cfg.Host + ":" + strconv.Itoa(int(cfg.Port)) + "/" + cfg.Database
}
