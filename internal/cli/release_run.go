package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/termtext"
)

// minRunPrefix is the fewest hex digits of a run id that --run accepts: the
// monitor, ls and events show 8.
const minRunPrefix = 8

// runHistory is how many of a key's latest events a run id prefix is
// checked against for ambiguity: the runs an operator may have seen hold it.
const runHistory = 1000

// runArg is what --run asked for: a full run id, or a prefix of one that
// the lease's current holder must be resolved from. A zero runArg is no
// --run (whoever holds the lease); it never comes from a value.
type runArg struct {
	given  bool
	full   uuid.UUID // when the value parsed as a whole UUID
	prefix string    // else: the lowercase leading part of the canonical form
}

// parseRunArg reads --run's value: a UUID, or its first 8 or more hex
// digits in the canonical form (the dashes where they belong), as the
// monitor, ls and events show them. An empty value is malformed, not absent.
func parseRunArg(s string) (runArg, error) {
	if u, err := uuid.Parse(s); err == nil {
		return runArg{given: true, full: u}, nil
	}
	p := strings.ToLower(s)
	digits := 0
	ok := len(p) > 0 && len(p) <= 36
	for i := 0; ok && i < len(p); i++ {
		switch c := p[i]; {
		case i == 8 || i == 13 || i == 18 || i == 23:
			ok = c == '-'
		case c >= '0' && c <= '9' || c >= 'a' && c <= 'f':
			digits++
		default:
			ok = false
		}
	}
	switch {
	case !ok:
		return runArg{}, usageErrorf("--run %q is not a run id (a UUID, or its first %d or more hex digits)", termtext.Clean(s, 40), minRunPrefix)
	case digits < minRunPrefix:
		return runArg{}, usageErrorf("--run %q is too short: give at least %d hex digits of the run id", termtext.Clean(s, 40), minRunPrefix)
	}
	return runArg{given: true, prefix: p}, nil
}

// String is the run as given: the full id, or the prefix and an ellipsis.
func (r runArg) String() string {
	if r.prefix != "" {
		return r.prefix + "…"
	}
	return r.full.String()
}

// resolve returns the full run id to compare-and-release with: the one
// given, or the current holder's when its id starts with the prefix and no
// other run in the key's recent history does. Nothing is released here:
// the release compares the id resolve returns, so a takeover after this read
// releases nothing.
func (r runArg) resolve(ctx context.Context, store *data.Store, key data.Key, name string) (uuid.UUID, error) {
	if r.prefix == "" {
		return r.full, nil
	}
	l, _, held, err := store.Lease(ctx, key)
	switch {
	case err != nil:
		return uuid.Nil, connError(err)
	case !held:
		return uuid.Nil, &ExitError{Code: ExitNothing, Err: fmt.Errorf("nothing to release: %s is not held", name)}
	case !strings.HasPrefix(l.RunID.String(), r.prefix):
		return uuid.Nil, &ExitError{Code: ExitNothing, Err: fmt.Errorf("nothing to release: %s is held by run %s (holder %q), not run %s",
			name, l.RunID, termtext.Clean(l.Holder, 64), r)}
	}
	evs, err := store.EventsFor(ctx, key, runHistory)
	if err != nil {
		return uuid.Nil, connError(err)
	}
	for _, ev := range evs {
		for _, other := range []uuid.UUID{ev.RunID, ev.PrevRunID} {
			if other != l.RunID && strings.HasPrefix(other.String(), r.prefix) {
				return uuid.Nil, usageErrorf("--run %s is ambiguous: runs %s (holding %s) and %s (in its history) both start with it; give more digits",
					r, l.RunID, name, other)
			}
		}
	}
	return l.RunID, nil
}
