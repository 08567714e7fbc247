package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/data"
	"github.com/leasetop/leasetop/internal/termtext"
	"github.com/leasetop/leasetop/monitor"
)

// cmdEvents prints the event history, oldest first, then with --follow the
// events as they happen, surviving reconnections without gaps or repeats.
func cmdEvents(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "events", "events [--since ID] [--limit N] [--follow [--listen-dsn URL] [--poll 250ms]] [--json] [--dsn URL]")
	dsn := dsnFlag(fs)
	listen := addListenFlags(fs)
	since := fs.Int64("since", -1, "print the events after this id (default: the most recent --limit)")
	limit := fs.Int("limit", 50, "print at most this many past events (0: no limit; default 50 without --since, no limit with it)")
	follow := fs.Bool("follow", false, "after the history, keep printing events as they happen (until interrupted)")
	asJSON := fs.Bool("json", false, "one JSON object per line")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("events takes no arguments, got %q", fs.Arg(0))
	}
	limitSet := false
	fs.Visit(func(f *flag.Flag) { limitSet = limitSet || f.Name == "limit" })
	if *limit < 0 {
		return usageErrorf("--limit must be 0 or more, got %d", *limit)
	}
	if *since >= 0 && !limitSet {
		*limit = 0
	}
	opt, err := listen.options(env)
	if err != nil {
		return err
	}
	store, err := openStoreWith(ctx, resolveDSN(env, *dsn), opt)
	if err != nil {
		return err
	}
	defer store.Close()
	emit := textEvent
	if *asJSON {
		emit = jsonEvent
	}
	printed := map[int64]bool{} // ids the history printed, the last followWindow of them
	start, end, err := printHistory(ctx, store, *since, *limit, func(ev data.Event) error {
		printed[ev.ID] = true
		if len(printed) > 4*followWindow {
			for id := range printed {
				if id <= ev.ID-followWindow {
					delete(printed, id)
				}
			}
		}
		return emit(env.Stdout, ev)
	})
	if err != nil {
		return connError(err)
	}
	if !*follow {
		return nil
	}
	return followEvents(ctx, env, store, start, end, printed, emit)
}

// followWindow is how many ids below the end of the history --follow
// re-reads: an event that drew its id before the history was read can
// commit after it.
const followWindow = 1000

// printHistory prints the past events, oldest first. The history covers the
// ids in (start, end].
func printHistory(ctx context.Context, store *data.Store, since int64, limit int, emit func(data.Event) error) (start, end int64, err error) {
	after := since
	end = -1 // known in advance only for the newest --limit
	if since < 0 {
		last, err := store.LastEventID(ctx)
		if err != nil {
			return 0, 0, err
		}
		after, end = 0, last
		if limit > 0 {
			after = max(0, last-int64(limit)) // the last limit ids (fewer events where ids have gaps)
		}
	}
	start = after
	printed := 0
	for ev, err := range store.Events(ctx, after) {
		if err != nil {
			return 0, 0, err
		}
		if (limit > 0 && printed == limit) || (end >= 0 && ev.ID > end) {
			break
		}
		if err := emit(ev); err != nil {
			return 0, 0, err
		}
		after = ev.ID
		printed++
	}
	return start, max(after, end), nil
}

// followEvents prints, until ctx ends, every event after the history and
// every event inside it that committed too late to be printed. It uses the
// monitor's feed, so it resyncs after reconnecting and prints each event
// once; connection changes are reported on stderr.
func followEvents(ctx context.Context, env Env, store *data.Store, start, end int64, printed map[int64]bool, emit func(io.Writer, data.Event) error) error {
	feed := monitor.NewFeed(store, monitor.FeedConfig{
		Since: true, After: max(start, end-followWindow), Window: followWindow,
		DeltaInterval: time.Hour, NotifiedInterval: time.Hour,
	})
	stopFeed := feed.Start(ctx)
	defer stopFeed()
	state := monitor.NewState(monitor.Config{EventLimit: 1})
	status := data.ListenerConnecting
	for {
		b, ok := feed.Next()
		if !ok {
			return nil
		}
		for _, ev := range state.Apply(b, time.Now()) {
			if ev.ID <= start || printed[ev.ID] {
				continue
			}
			if err := emit(env.Stdout, ev); err != nil {
				return err
			}
		}
		if b.Conn.Status != status {
			reportLink(env.Stderr, b.Conn, status)
			status = b.Conn.Status
		}
	}
}

// reportLink says on w what the follower's connection is doing now that it
// changed from was: live, polling (and, the first time, why), or lost.
func reportLink(w io.Writer, st data.ListenerState, was data.ListenerStatus) {
	switch st.Status {
	case data.ListenerLive:
		fmt.Fprintln(w, "leasetop: following events live")
	case data.ListenerPolling:
		if was == data.ListenerReconnecting {
			fmt.Fprintln(w, "leasetop: polling again")
		} else {
			fmt.Fprintln(w, pollLine(st))
		}
	case data.ListenerReconnecting:
		msg := "leasetop: connection lost, reconnecting"
		if st.Err != nil {
			msg += ": " + termtext.Clean(oneLine(st.Err.Error()), 200)
		}
		fmt.Fprintln(w, msg)
	}
}

// textEvent prints one event as a logfmt-style line, every value cleaned.
func textEvent(w io.Writer, ev data.Event) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s %-14s %s", ev.ID, ev.At.UTC().Format("2006-01-02T15:04:05.000Z"), ev.Kind, quoteValue(termtext.Mark(ev.Key.String(), 0)))
	field := func(name, value string) {
		if value != "" {
			b.WriteString(" " + name + "=" + logValue(value))
		}
	}
	id := func(name, value string) { // an id or label: marked where it may look like another
		if value != "" {
			b.WriteString(" " + name + "=" + quoteValue(termtext.Mark(value, 0)))
		}
	}
	runText := func(u uuid.UUID) string {
		if u == uuid.Nil {
			return ""
		}
		return u.String()
	}
	field("run", runText(ev.RunID))
	field("prev_run", runText(ev.PrevRunID))
	if ev.Fence != 0 {
		field("fence", fmt.Sprint(ev.Fence))
	}
	if ev.PrevFence != 0 {
		field("prev_fence", fmt.Sprint(ev.PrevFence))
	}
	id("holder", ev.Holder)
	id("prev_holder", ev.PrevHolder)
	field("actor", ev.Actor)
	field("reason", ev.Reason)
	_, err := fmt.Fprintln(w, b.String())
	return err
}

// logValue cleans v and quotes it when it has spaces, quotes or '='.
func logValue(v string) string { return quoteValue(termtext.Clean(v, 0)) }

// quoteValue quotes c, a cleaned value, when it has spaces, quotes or '='.
func quoteValue(c string) string {
	if c == "" || strings.ContainsAny(c, " \"=") {
		return `"` + strings.ReplaceAll(c, `"`, `\"`) + `"`
	}
	return c
}

// jsonEvent prints ev as one line of JSON: the notification payload's fields
// (data.Event's MarshalJSON), null where absent.
func jsonEvent(w io.Writer, ev data.Event) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}
