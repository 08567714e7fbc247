package ui

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
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
// (role lease_reader). A monitor of several databases is given their
// Config.Contexts instead of a Store: it opens each (and keeps trying, for
// one that is down), runs a feed of each (Context.Feed; Options.Feed is not
// used) and shows them in one table; ReadOnly makes every one read-only.
type Options struct {
	Config
	// Store is the database to watch; nil for a monitor of several
	// (Config.Contexts).
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
	// NoSignalHandler leaves SIGINT and SIGTERM to the caller, which ends
	// ctx on them (tea.WithoutSignalHandler). Without it the program quits
	// on them by itself, as on q, and Run returns nil: a caller that also
	// catches them cannot tell which of the two saw the signal first.
	NoSignalHandler bool
}

// FrameRate is the most frames a second the monitor's program draws
// (Bubble Tea's default is 60). Bubble Tea's renderer wakes up this often
// even when nothing changed; on its own the screen changes only with the
// countdown tick, four times a second. At 60 those idle wake-ups alone cost
// 1.2-2.0 % of a core on the benchmark machine (docs/BENCHMARKS.md), at 30
// about 0.6 %, and a key press is still drawn within 33 ms.
const FrameRate = 30

// Run opens the monitor on opt.Store (or opt.Contexts) and returns when the user quits or ctx
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
	src := dbsSource(ctx, []dbSource{{store: func() *data.Store { return store }, readOnly: readOnly}}, historyLimit)
	src.NextFunc, src.ResyncFunc = feed.Next, feed.Resync
	return src
}

// contextsSource is the Source of a monitor of several databases: each call
// goes to the database of the key it is about; the reads of every session
// (queues, asks) read them all. A context whose store has not opened yet is
// an error of its own; a read of them all leaves it out.
func contextsSource(ctx context.Context, feeds *monitor.Feeds, contexts []Context, historyLimit int) Source {
	dbs := make([]dbSource, len(contexts))
	for i, c := range contexts {
		dbs[i] = dbSource{name: c.Name, store: func() *data.Store { return feeds.Store(i) }, readOnly: c.ReadOnly}
	}
	src := dbsSource(ctx, dbs, historyLimit)
	src.NextFunc, src.ResyncFunc = feeds.Next, feeds.Resync
	return src
}

// dbSource is one database a monitor reads and acts on.
type dbSource struct {
	name     string             // its context's name: "" in a monitor of one database
	store    func() *data.Store // nil until it opened
	readOnly bool
}

// errNotOpen: a context's store has not opened yet.
type errNotOpen string

func (e errNotOpen) Error() string { return "context " + string(e) + " is not connected yet" }

// open returns db's store, or why there is none.
func (db dbSource) open() (*data.Store, error) {
	if s := db.store(); s != nil {
		return s, nil
	}
	return nil, errNotOpen(db.name)
}

// dbsSource is the Source of a monitor of dbs, without the feed's calls.
func dbsSource(ctx context.Context, dbs []dbSource, historyLimit int) Source {
	if historyLimit <= 0 {
		historyLimit = 200
	}
	find := func(k monitor.Key) (dbSource, *data.Store, error) {
		for _, db := range dbs {
			if db.name == k.Context {
				s, err := db.open()
				return db, s, err
			}
		}
		return dbSource{}, nil, fmt.Errorf("no context %q", k.Context)
	}
	src := Source{
		HistoryFunc: func(k monitor.Key) ([]data.Event, error) {
			_, s, err := find(k)
			if err != nil {
				return nil, err
			}
			evs, err := s.EventsFor(ctx, k.Key, historyLimit)
			for i := range evs {
				evs[i].Context = k.Context
			}
			return evs, err
		},
		LockersFunc: func(k monitor.Key) ([]data.Locker, error) {
			_, s, err := find(k)
			if err != nil {
				return nil, err
			}
			return s.Lockers(ctx, k.Key)
		},
		QueuesFunc: func() (map[monitor.Key]int, error) {
			return readAll(dbs, func(s *data.Store) (map[data.Key]int, error) { return s.QueueLengths(ctx) })
		},
		QueueFunc: func(k monitor.Key) ([]data.Ticket, error) {
			_, s, err := find(k)
			if err != nil {
				return nil, err
			}
			return s.QueueOf(ctx, k.Key)
		},
		AsksFunc: func() (map[monitor.Key]data.PendingAsk, error) {
			return readAll(dbs, func(s *data.Store) (map[data.Key]data.PendingAsk, error) { return s.PendingAsks(ctx) })
		},
		InboxesFunc: func() (map[monitor.Key]data.Inbox, error) {
			return readAll(dbs, func(s *data.Store) (map[data.Key]data.Inbox, error) { return s.Inboxes(ctx) })
		},
		LimitsFunc: func() ([]AccountLimit, error) { return readLimits(ctx, dbs) },
	}
	src.TimelineFunc, src.OwnersAtFunc = dbsTimeline(ctx, dbs)
	if slices.ContainsFunc(dbs, func(db dbSource) bool { return !db.readOnly }) {
		src.ReleaseFunc = func(k monitor.Key, run uuid.UUID, reason string) (ReleaseResult, error) {
			db, s, err := find(k)
			if err == nil && db.readOnly {
				err = readOnlyError(k.Context, "forced release")
			}
			if err != nil {
				return ReleaseResult{}, err
			}
			return forceRelease(ctx, s, k.Key, run, reason)
		}
		src.ClearQueueFunc = func(k monitor.Key, reason string) (int, error) {
			db, s, err := find(k)
			if err == nil && db.readOnly {
				err = readOnlyError(k.Context, "clearing a queue")
			}
			if err != nil {
				return 0, err
			}
			return clearQueue(ctx, s, k.Key, reason)
		}
	}
	return src
}

// readOnlyError refuses what in a read-only context.
func readOnlyError(context, what string) error {
	return fmt.Errorf("context %s is read-only: %s is refused there", context, what)
}

// readAll reads every open database of dbs with read and puts what each
// returned under its context. A database that fails is left out; when every
// one failed (or none is open), the first error is returned.
func readAll[V any](dbs []dbSource, read func(*data.Store) (map[data.Key]V, error)) (map[monitor.Key]V, error) {
	out := map[monitor.Key]V{}
	var first error
	ok := false
	for _, db := range dbs {
		s, err := db.open()
		var got map[data.Key]V
		if err == nil {
			got, err = read(s)
		}
		if err != nil {
			first = cmp.Or(first, err)
			continue
		}
		ok = true
		for k, v := range got {
			out[monitor.Key{Context: db.name, Key: k}] = v
		}
	}
	if !ok {
		return nil, first
	}
	return out, nil
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

// readLimits reads every open database's limits (data.Store.Limits), each
// under its context. A database that fails is left out; when every one
// failed (or none is open), the first error is returned.
func readLimits(ctx context.Context, dbs []dbSource) ([]AccountLimit, error) {
	var out []AccountLimit
	var first error
	ok := false
	for _, db := range dbs {
		s, err := db.open()
		var got []data.LimitUsage
		if err == nil {
			got, err = s.Limits(ctx, "")
		}
		if err != nil {
			first = cmp.Or(first, err)
			continue
		}
		ok = true
		for _, u := range got {
			out = append(out, AccountLimit{Context: db.name, LimitUsage: u})
		}
	}
	if !ok {
		return nil, first
	}
	return out, nil
}
