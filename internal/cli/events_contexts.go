package cli

import (
	"cmp"
	"context"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// eventsContexts is events across contexts: each context's history read at
// once, printed interleaved by time, each event tagged with its context
// (the text's first word, the JSON's "context"); then, with --follow, every
// context's new events as they come, through one monitor.Feeds, each
// context's once whatever its connection does. A context that cannot be
// read is one line on stderr; the others are printed. Without --follow
// events then exits 1; with it, the follower keeps trying it and prints its
// events from when it comes up.
func eventsContexts(ctx context.Context, env Env, a eventsOptions) error {
	cs, emit := a.contexts, a.emit()
	if a.since.hasID && len(cs) > 1 {
		return usageErrorf("--since ID with more than one context: each database numbers its own events (use --since TIME)")
	}
	parts := make([]eventsPart, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Go(func() { parts[i] = readEvents(ctx, c, a) })
	}
	wg.Wait()
	var all []data.Event
	errs := make([]error, len(parts))
	for i, p := range parts {
		all, errs[i] = append(all, p.events...), p.err
	}
	order := func(name string) int { return slices.IndexFunc(cs, func(c dbContext) bool { return c.name == name }) }
	slices.SortStableFunc(all, func(x, y data.Event) int {
		return cmp.Or(x.At.Compare(y.At), cmp.Compare(order(x.Context), order(y.Context)), cmp.Compare(x.ID, y.ID))
	})
	for _, ev := range all {
		if err := emit(env.Stdout, ev); err != nil {
			return err
		}
	}
	if !a.follow {
		return reportContexts(env.Stderr, errs)
	}
	for _, err := range errs {
		if err != nil {
			Report(env.Stderr, err)
		}
	}
	return followContexts(ctx, env, parts, a)
}

// eventsPart is one context's history: its events (tagged), the ids a
// follower goes on from, or why it has none.
type eventsPart struct {
	events     []data.Event
	filter     eventFilter
	start, end int64
	printed    map[int64]bool
	err        error
}

// readEvents reads c's history as events prints it, on a store of its own.
func readEvents(ctx context.Context, c dbContext, a eventsOptions) eventsPart {
	// Until its history is read (never, if it cannot be), the follower
	// still filters by account, session and kind.
	p := eventsPart{printed: map[int64]bool{}, filter: a.filter}
	store, err := openContext(ctx, c, data.Options{})
	if err != nil {
		p.err = err
		return p
	}
	defer store.Close()
	f, err := a.resolve(ctx, store)
	if err == nil {
		p.filter = f
		p.start, p.end, err = printEvents(ctx, store, a, p.filter, p.printed, func(ev data.Event) error {
			ev.Context = c.name
			p.events = append(p.events, ev)
			return nil
		})
	}
	if err != nil {
		p.events, p.err = nil, c.failed(err)
	}
	return p
}

// followContexts prints, until ctx ends, every context's events after its
// history, each once: one State of them all keeps each context's ids apart.
// A context whose history could not be read starts from the newest a.limit
// ids of its database when it comes up. Each context's connection changes
// are reported on stderr.
func followContexts(ctx context.Context, env Env, parts []eventsPart, a eventsOptions) error {
	cs, opt, emit := a.contexts, a.store, a.emit()
	ctxs := make([]monitor.Context, len(cs))
	names := make([]string, len(cs))
	for i, c := range cs {
		cfg := monitor.FeedConfig{Since: true, After: max(parts[i].start, parts[i].end-followWindow), Window: followWindow,
			DeltaInterval: time.Hour, NotifiedInterval: time.Hour}
		if parts[i].err != nil {
			cfg.Since, cfg.After, cfg.Tail = false, 0, int64(max(a.limit, 1))
		}
		ctxs[i] = monitor.Context{Name: c.name, Feed: cfg, Open: func(ctx context.Context) (*data.Store, error) {
			return openContext(ctx, c, opt)
		}}
		names[i] = c.name
	}
	feeds := monitor.NewFeeds(ctxs)
	stop := feeds.Start(ctx)
	defer stop()
	state := monitor.NewState(monitor.Config{EventLimit: 1, Contexts: names})
	status := make([]data.ListenerStatus, len(cs))
	for {
		b, ok := feeds.Next()
		if !ok {
			return nil
		}
		p := parts[b.Context]
		for _, ev := range state.Apply(b, time.Now()) {
			if (p.err == nil && (ev.ID <= p.start || p.printed[ev.ID])) || !p.filter.match(ev) {
				continue
			}
			if err := emit(env.Stdout, ev); err != nil {
				return err
			}
		}
		if b.Conn.Status != status[b.Context] {
			reportLink(prefixed{env.Stderr, "context " + names[b.Context] + ": "}, b.Conn, status[b.Context])
			status[b.Context] = b.Conn.Status
		}
	}
}

// prefixed writes each line it is given after "leasetop: " with prefix in
// between: "leasetop: context eu: connection lost…".
type prefixed struct {
	w      io.Writer
	prefix string
}

func (p prefixed) Write(b []byte) (int, error) {
	const head = "leasetop: "
	line := string(b)
	if len(line) >= len(head) && line[:len(head)] == head {
		line = head + p.prefix + line[len(head):]
	}
	if _, err := io.WriteString(p.w, line); err != nil {
		return 0, err
	}
	return len(b), nil
}
