package cli

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/leasetop/leasetop/internal/data"
)

// listFlag is a repeatable flag whose values may also be comma lists.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(s string) error {
	for v := range strings.SplitSeq(s, ",") {
		if v = strings.TrimSpace(v); v == "" {
			return fmt.Errorf("empty value in %q", s)
		}
		*l = append(*l, v)
	}
	return nil
}

// kindsFlag is --kind: a listFlag of event kinds, each checked.
type kindsFlag []data.Kind

func (k *kindsFlag) String() string { return strings.Join(kindStrings(*k), ",") }

func (k *kindsFlag) Set(s string) error {
	var l listFlag
	if err := l.Set(s); err != nil {
		return err
	}
	for _, v := range l {
		kind := data.Kind(v)
		if !kind.Valid() || kind == data.KindRenewed {
			return fmt.Errorf("unknown kind %q: want one of %s", v, strings.Join(kindStrings(eventKinds()), ", "))
		}
		*k = append(*k, kind)
	}
	return nil
}

// eventKinds are the kinds an event row can have, in the order they are
// listed (data.Kinds). renewed is a notification, never a row.
func eventKinds() []data.Kind { return data.Kinds() }

func kindStrings(kinds []data.Kind) []string {
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = string(k)
	}
	return out
}

// sinceFlag is events --since: an event id (as before: the events after it)
// or a time (the events at or after it).
type sinceFlag struct {
	hasID bool
	id    int64
	time  timeArg
}

// after is the id to print the events after, -1 when none was given.
func (f *sinceFlag) after() int64 {
	if !f.hasID {
		return -1
	}
	return f.id
}

func (f *sinceFlag) String() string {
	if f.time.set {
		return (&timeFlag{f.time}).String()
	}
	if !f.hasID {
		return ""
	}
	return strconv.FormatInt(f.id, 10)
}

func (f *sinceFlag) Set(s string) error {
	if id, err := strconv.ParseInt(s, 10, 64); err == nil {
		if id < 0 {
			return fmt.Errorf("event id %d is negative", id)
		}
		f.hasID, f.id, f.time = true, id, timeArg{}
		return nil
	}
	a, err := parseTimeArg(s)
	if err != nil {
		return fmt.Errorf("%w, or an event id", err)
	}
	f.hasID, f.id, f.time = false, 0, a
	return nil
}

// eventFilter is what events' filters select, with the times resolved.
type eventFilter struct {
	accounts, sessions []string
	kinds              []data.Kind
	since, until       time.Time
}

// any reports whether the filter selects less than everything.
func (f eventFilter) any() bool {
	return len(f.accounts)+len(f.sessions)+len(f.kinds) > 0 || !f.since.IsZero() || !f.until.IsZero()
}

// match reports whether ev passes the filter (the history's query applies
// the same conditions in SQL; --follow and --since ID apply them here).
func (f eventFilter) match(ev data.Event) bool {
	return (len(f.accounts) == 0 || slices.Contains(f.accounts, ev.Key.Account)) &&
		(len(f.sessions) == 0 || slices.Contains(f.sessions, ev.Key.Session)) &&
		(len(f.kinds) == 0 || slices.Contains(f.kinds, ev.Kind)) &&
		(f.since.IsZero() || !ev.At.Before(f.since)) &&
		(f.until.IsZero() || ev.At.Before(f.until))
}

func (f eventFilter) history(limit int, newest bool) data.HistoryFilter {
	return data.HistoryFilter{Accounts: f.accounts, Sessions: f.sessions, Kinds: f.kinds,
		Since: f.since, Until: f.until, Limit: limit, Descending: newest}
}
