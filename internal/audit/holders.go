package audit

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
)

// Peak is the most runs of one account that held leases at one instant on
// the database clock, over a whole history (PeakHolders).
type Peak struct {
	Most int       // the most runs live at one instant
	At   time.Time // the first instant that many were live (zero: no run)
	Runs int       // the holds counted: runs granted a session of the account
}

// hold is one run's hold of a session, on the database clock: [from, to).
type hold struct{ from, to time.Time }

// PeakHolders reads from lease.event and lease.session_lease every run's
// hold of a session of account — from its grant to its release, its
// replacement (a takeover, a preempt, a hand-over) or its expiry — and
// returns the most holds live at one instant. Renewals write no event, so a
// hold's end is read where the database wrote it: a release's expires_at, a
// replacement's prev_expires_at, or, for a run that still owns its row, the
// row's expires_at (a grant with neither, which the protocol never leaves,
// counts until its grant's expiry). Each end is the lease's real end, so the count is exact
// on the database clock: neither a slow holder nor a crash can hide a second
// holder. Run it when no holder is running any more, on the server that
// survived the fault.
//
// It is the one count of "never more holders than the limit" outside
// Check's invariant 9, which counts at each grant the runs the history alone
// proves live (a lower bound, needing no rows): the data package's
// concurrency test and the fault suite share it.
func PeakHolders(ctx context.Context, store *data.Store, account string) (Peak, error) {
	type grant struct{ from, expires time.Time }
	open := map[string]grant{} // session → its current hold's grant
	var holds []hold
	for e, err := range store.Events(ctx, 0) {
		if err != nil {
			return Peak{}, fmt.Errorf("read the event history: %w", err)
		}
		if e.Key.Account != account {
			continue
		}
		g, held := open[e.Key.Session]
		switch {
		case e.Kind.Ends():
			if held {
				holds = append(holds, hold{g.from, earliest(e.At, e.ExpiresAt)})
				delete(open, e.Key.Session)
			}
		case e.Kind.Grants():
			if held {
				holds = append(holds, hold{g.from, earliest(e.At, e.PrevExpiresAt)})
			}
			open[e.Key.Session] = grant{e.At, e.ExpiresAt}
		}
	}
	if len(open) > 0 {
		rows, err := store.Pool().Query(ctx, `SELECT session_id, expires_at FROM lease.session_lease WHERE account_id = $1`, account)
		if err != nil {
			return Peak{}, fmt.Errorf("read the leases: %w", err)
		}
		type row struct {
			session string
			expires time.Time
		}
		rs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
			var x row
			err := r.Scan(&x.session, &x.expires)
			return x, err
		})
		if err != nil {
			return Peak{}, fmt.Errorf("read the leases: %w", err)
		}
		for _, x := range rs {
			if g, ok := open[x.session]; ok {
				holds = append(holds, hold{g.from, x.expires})
				delete(open, x.session)
			}
		}
	}
	for _, g := range open { // a grant whose row is gone with no event: at least until its grant's expiry
		holds = append(holds, hold{g.from, g.expires})
	}
	p := mostLive(holds)
	p.Runs = len(holds)
	return p, nil
}

// earliest is the earlier of at and end, or at when end is zero (unknown).
func earliest(at, end time.Time) time.Time {
	if !end.IsZero() && end.Before(at) {
		return end
	}
	return at
}

// mostLive is the most holds live at one instant, and the first instant.
func mostLive(holds []hold) Peak {
	type edge struct {
		at time.Time
		d  int
	}
	edges := make([]edge, 0, 2*len(holds))
	for _, h := range holds {
		if h.to.After(h.from) {
			edges = append(edges, edge{h.from, 1}, edge{h.to, -1})
		}
	}
	sort.Slice(edges, func(i, j int) bool {
		if !edges[i].at.Equal(edges[j].at) {
			return edges[i].at.Before(edges[j].at)
		}
		return edges[i].d < edges[j].d // an end before a start at the same instant
	})
	var p Peak
	n := 0
	for _, e := range edges {
		n += e.d
		if n > p.Most {
			p.Most, p.At = n, e.at
		}
	}
	return p
}
