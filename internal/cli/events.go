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

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/termtext"
	"github.com/leasetop/leasetop/monitor"
)

// cmdEvents prints the event history, oldest first, then with --follow the
// events as they happen, surviving reconnections without gaps or repeats.
// --account, --session, --kind, --since TIME and --until TIME select the
// events by time range through an index (data.Store.EventsBetween). With
// --context it prints the events of several databases, interleaved by time
// and tagged with their context (events_contexts.go).
func cmdEvents(ctx context.Context, env Env, args []string) error {
	o, err := parseEventsFlags(env, args)
	if err != nil {
		return err
	}
	if o.contexts != nil {
		return eventsContexts(ctx, env, o)
	}
	store, err := openStoreWith(ctx, resolveDSN(env, o.dsn), o.store)
	if err != nil {
		return err
	}
	defer store.Close()
	filter, err := o.resolve(ctx, store)
	if err != nil {
		return err
	}
	emit := filtered(o.emit(), filter)
	printed := map[int64]bool{} // ids the history printed, the last followWindow of them
	start, end, err := printEvents(ctx, store, o, filter, printed, func(ev data.Event) error { return emit(env.Stdout, ev) })
	if err != nil {
		return connError(err)
	}
	if !o.follow {
		return nil
	}
	return followEvents(ctx, env, store, start, end, printed, emit)
}

// printEvents prints store's history as o and filter select, each event
// that filter matches through show, oldest first, and returns the ids a
// follower goes on from (see printHistory and printSelected); printed gets
// the ids printed.
func printEvents(ctx context.Context, store *data.Store, o eventsOptions, filter eventFilter, printed map[int64]bool, show func(data.Event) error) (start, end int64, err error) {
	record := func(ev data.Event) error {
		rememberPrinted(printed, ev.ID)
		if !filter.match(ev) {
			return nil
		}
		return show(ev)
	}
	if filter.any() && !o.since.hasID {
		return printSelected(ctx, store, filter, o.limit, printed, record)
	}
	return printHistory(ctx, store, o.since.after(), o.limit, filter, record)
}

// emit is how each event is printed: textEvent, or jsonEvent with --json.
func (o eventsOptions) emit() func(io.Writer, data.Event) error {
	if o.asJSON {
		return jsonEvent
	}
	return textEvent
}

// eventsOptions are leasetop events' parsed flags.
type eventsOptions struct {
	dsn    string
	store  data.Options // --listen-dsn, --poll: how --follow hears
	since  sinceFlag
	until  timeFlag
	filter eventFilter // the accounts, sessions and kinds; the times come from resolve
	limit  int
	follow bool
	asJSON bool
	// contexts are the databases of --context, nil without it.
	contexts []dbContext
}

// parseEventsFlags parses and checks leasetop events' flags.
func parseEventsFlags(env Env, args []string) (eventsOptions, error) {
	var o eventsOptions
	fs := newFlags(env, "events", "events [--since ID|TIME] [--until TIME] [--account A] [--session S] [--kind K] [--limit N] [--follow [--listen-dsn URL] [--poll 250ms]] [--json] [--dsn URL | --context NAME...] [--config PATH]")
	dsn := dsnFlag(fs)
	listen := addListenFlags(fs)
	contexts := addContextFlags(fs, nil)
	fs.Var(&o.since, "since", "print the events after this event id, or at or after this time: RFC 3339 or a duration ago (\"10m ago\") on the database clock (default: the most recent --limit)")
	fs.Var(&o.until, "until", "print the events before this time (RFC 3339 or \"10m ago\"); not with --follow")
	var accounts, sessions listFlag
	fs.Var(&accounts, "account", "print only this account's events (repeatable, or a comma list)")
	fs.Var(&sessions, "session", "print only the events of sessions with this id (repeatable, or a comma list)")
	var kinds kindsFlag
	fs.Var(&kinds, "kind", "print only events of this kind (repeatable, or a comma list): "+strings.Join(kindStrings(eventKinds()), ", "))
	limit := fs.Int("limit", 50, "print at most this many past events (0: no limit; default 50 without --since, no limit with it)")
	follow := fs.Bool("follow", false, "after the history, keep printing events as they happen (until interrupted)")
	asJSON := fs.Bool("json", false, "one JSON object per line")
	if err := parseFlags(fs, args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, usageErrorf("events takes no arguments, got %q", fs.Arg(0))
	}
	o.dsn, o.limit, o.follow, o.asJSON = *dsn, *limit, *follow, *asJSON
	o.filter = eventFilter{accounts: accounts, sessions: sessions, kinds: kinds}
	limitSet := false
	fs.Visit(func(f *flag.Flag) { limitSet = limitSet || f.Name == "limit" })
	if o.limit < 0 {
		return o, usageErrorf("--limit must be 0 or more, got %d", o.limit)
	}
	if (o.since.hasID || o.since.time.set) && !limitSet {
		o.limit = 0
	}
	if o.until.set && o.follow {
		return o, usageErrorf("--until and --follow cannot go together: --follow prints the events after now")
	}
	if !o.until.rel && !o.since.time.rel && o.until.set && o.since.time.set && o.until.abs.Before(o.since.time.abs) {
		return o, usageErrorf("--until %s is before --since %s", o.until.abs.Format(time.RFC3339Nano), o.since.time.abs.Format(time.RFC3339Nano))
	}
	var err error
	if o.contexts, err = contexts.resolve(env); err != nil {
		return o, err
	}
	o.store, err = listen.options(env)
	return o, err
}

// resolve returns the filter with --since and --until as times on the
// database clock ("10m ago" counts from the server's now).
func (o eventsOptions) resolve(ctx context.Context, store *data.Store) (eventFilter, error) {
	filter := o.filter
	if !o.since.time.set && !o.until.set {
		return filter, nil
	}
	now, err := store.ServerTime(ctx)
	if err != nil {
		return filter, connError(err)
	}
	if o.since.time.set {
		filter.since = o.since.time.at(now)
	}
	if o.until.set {
		filter.until = o.until.at(now)
	}
	if filter.since.After(filter.until) && !filter.until.IsZero() {
		return filter, usageErrorf("--until (%s) is before --since (%s)", filter.until.Format(time.RFC3339Nano), filter.since.Format(time.RFC3339Nano))
	}
	return filter, nil
}

// filtered is emit for the events filter matches only.
func filtered(emit func(io.Writer, data.Event) error, filter eventFilter) func(io.Writer, data.Event) error {
	if !filter.any() {
		return emit
	}
	return func(w io.Writer, ev data.Event) error {
		if !filter.match(ev) {
			return nil
		}
		return emit(w, ev)
	}
}

// rememberPrinted adds id to the ids printed, forgetting those more than
// followWindow below it once there are many.
func rememberPrinted(printed map[int64]bool, id int64) {
	printed[id] = true
	if len(printed) > 4*followWindow {
		for old := range printed {
			if old <= id-followWindow {
				delete(printed, old)
			}
		}
	}
}

// followWindow is how many ids below the end of the history --follow
// re-reads: an event that drew its id before the history was read can
// commit after it.
const followWindow = 1000

// printHistory prints the past events, oldest first. The history covers the
// ids in (start, end].
// With --since ID and a filter, the filter is applied here, and limit counts
// the events it printed.
func printHistory(ctx context.Context, store *data.Store, since int64, limit int, filter eventFilter, emit func(data.Event) error) (start, end int64, err error) {
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
		after = ev.ID
		if !filter.match(ev) {
			continue
		}
		if err := emit(ev); err != nil {
			return 0, 0, err
		}
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

// textEvent prints one event as a logfmt-style line, every value cleaned;
// an event of a context (events --context) begins with the context's name.
func textEvent(w io.Writer, ev data.Event) error {
	var b strings.Builder
	if ev.Context != "" {
		b.WriteString(termtext.Clean(ev.Context, 0) + " ")
	}
	where := ev.Key.String()
	if ev.Kind.AccountWide() { // limit_set, limit_removed: the account alone
		where = ev.Key.Account
	}
	fmt.Fprintf(&b, "%d %s %-14s %s", ev.ID, ev.At.UTC().Format("2006-01-02T15:04:05.000Z"), ev.Kind, quoteValue(termtext.Mark(where, 0)))
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
	if ev.MessageID != 0 {
		field("message", fmt.Sprint(ev.MessageID))
	}
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
