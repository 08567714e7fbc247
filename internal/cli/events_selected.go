package cli

import (
	"context"
	"slices"

	"github.com/leasetop/leasetop/internal/data"
)

// printSelected prints the past events filter selects, oldest first: from
// --since TIME all of them (or the first limit), else the newest limit (0:
// all). It reads them by time range (data.Store.EventsBetween, or
// EventsBetweenAll a page at a time where there is no limit).
//
// For --follow it returns the ids the follower must go on from: start, below
// which it prints nothing, is followWindow ids below the newest id committed
// before the history was read, and printed gets every id committed in that
// window then, printed or not (the history saw them all: those it did not
// print were not selected), so that the follower prints only the events that
// committed after, and each once.
func printSelected(ctx context.Context, store *data.Store, filter eventFilter, limit int, printed map[int64]bool, emit func(data.Event) error) (start, end int64, err error) {
	end, err = store.LastEventID(ctx)
	if err != nil {
		return 0, 0, err
	}
	start = max(0, end-followWindow)
	seen, err := store.EventsSince(ctx, start, followWindow+1)
	if err != nil {
		return 0, 0, err
	}
	if filter.since.IsZero() && limit > 0 {
		// The newest limit, read newest first and printed oldest first.
		evs, err := store.EventsBetween(ctx, filter.history(limit, true))
		if err != nil {
			return 0, 0, err
		}
		slices.Reverse(evs)
		for _, ev := range evs {
			if err := emit(ev); err != nil {
				return 0, 0, err
			}
		}
	} else {
		// All of them, or the oldest limit from --since: a page at a time.
		n := 0
		for ev, err := range store.EventsBetweenAll(ctx, filter.history(0, false)) {
			if err != nil {
				return 0, 0, err
			}
			if limit > 0 && n == limit {
				break
			}
			if err := emit(ev); err != nil {
				return 0, 0, err
			}
			n++
		}
	}
	for _, ev := range seen {
		printed[ev.ID] = true
	}
	return start, end, nil
}
