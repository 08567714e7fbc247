package monitor

import (
	"cmp"
	"slices"

	"github.com/leasetop/leasetop/internal/data"
)

// Key names a lease in a State: its key, and the context it is in, in a
// State of several databases (Config.Contexts); "" names a State's one
// database, or its first.
type Key struct {
	Context string
	data.Key
}

// KeyOf returns l's Key.
func KeyOf(l data.Lease) Key { return Key{Context: l.Context, Key: l.Key} }

// EventKey returns the Key of ev's session.
func EventKey(ev data.Event) Key { return Key{Context: ev.Context, Key: ev.Key} }

// String returns "account/session", after "context:" when the key has a
// context.
func (k Key) String() string {
	if k.Context == "" {
		return k.Key.String()
	}
	return k.Context + ":" + k.Key.String()
}

// mergeEvents appends to dst the members' events, newest first by time
// (ties: the contexts' order, then the newer id), at most limit: each
// context's newest in one list.
func mergeEvents(dst []data.Event, members []member, limit int) []data.Event {
	type item struct {
		ev *data.Event
		c  int
	}
	var all []item
	for c := range members {
		for i := range members[c].events {
			all = append(all, item{&members[c].events[i], c})
		}
	}
	slices.SortFunc(all, func(a, b item) int {
		return cmp.Or(b.ev.At.Compare(a.ev.At), cmp.Compare(a.c, b.c), cmp.Compare(b.ev.ID, a.ev.ID))
	})
	for _, it := range all[:min(len(all), limit)] {
		dst = append(dst, *it.ev)
	}
	return dst
}
