package data_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// Replay, the timeline's opening read in one round trip, answers what its
// parts answer one statement at a time: at every probe instant of a known
// history, who held the session (OwnersAt) and the events since
// (EventsBetween); from before the history kept, it starts where the
// history starts.
func TestReplayAgreesWithItsParts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	h := pgtest.BuildKnownHistory(t, db, s)
	f := data.HistoryFilter{Keys: []data.Key{h.Key}}
	ids := func(evs []data.Event) []int64 {
		var out []int64
		for _, ev := range evs {
			out = append(out, ev.ID)
		}
		return out
	}
	for _, p := range h.Probes {
		f.Since = p.At
		r, err := s.Replay(ctx, f)
		if err != nil {
			t.Fatalf("%s: Replay(since %v) err = %v", p.Name, p.At, err)
		}
		o, err := s.OwnersAt(ctx, p.At, f)
		if err != nil {
			t.Fatalf("%s: OwnersAt(%v) err = %v", p.Name, p.At, err)
		}
		evs, err := s.EventsBetween(ctx, f)
		if err != nil {
			t.Fatalf("%s: EventsBetween(since %v) err = %v", p.Name, p.At, err)
		}
		if !r.Start.At.Equal(p.At) || !slices.EqualFunc(r.Start.Holdings, o.Holdings, sameHolding) {
			t.Errorf("%s: Replay's start at %v = %+v, want OwnersAt's at %v: %+v", p.Name, r.Start.At, r.Start.Holdings, p.At, o.Holdings)
		}
		if got, want := ids(r.Events), ids(evs); !slices.Equal(got, want) {
			t.Errorf("%s: Replay's events %v, want EventsBetween's %v", p.Name, got, want)
		}
	}
	f.Since = h.Start.Add(-1000)
	r, err := s.Replay(ctx, f)
	if err != nil {
		t.Fatalf("Replay from before the history kept: err = %v", err)
	}
	if !r.Start.At.Equal(r.Start.HistoryStart) || r.Start.HistoryStart.IsZero() || len(r.Events) != len(h.Events) {
		t.Errorf("Replay from before the history kept starts at %v (history from %v) with %d events, want the history's start and its %d events",
			r.Start.At, r.Start.HistoryStart, len(r.Events), len(h.Events))
	}
}

func sameHolding(a, b data.Holding) bool {
	return a.Key == b.Key && a.RunID == b.RunID && a.Fence == b.Fence && a.Expired == b.Expired &&
		a.ExpiresAt.Equal(b.ExpiresAt) && a.ExpiryKnown == b.ExpiryKnown && a.TTL == b.TTL
}

// The history's reads are one pipeline each: OwnersAt and Replay send
// their statements (a snapshot's COMMIT included) as one pipeline, not one
// statement at a time (on a loaded machine each round trip is a wait for
// the server's process: the timeline's steps). A session not pinned at
// start-up, as here, sends the BEGIN with the search_path's pin first, on
// its own: its statements must be parsed under it (data.Pinned).
func TestHistoryReadsAreOneRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	h := pgtest.BuildKnownHistory(t, db, db.Store(t))
	cfg, err := data.ParsePoolConfig(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	tr := &tripCounter{}
	cfg.ConnConfig.Tracer = tr
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s := data.New(pool)
	f := data.HistoryFilter{Keys: []data.Key{h.Key}, Since: h.Probes[0].At}
	if _, err := s.Replay(ctx, f); err != nil { // connects; describes the statements once
		t.Fatal(err)
	}
	for _, read := range []struct {
		name string
		call func() error
	}{
		{"OwnersAt", func() error { _, err := s.OwnersAt(ctx, f.Since, f); return err }},
		{"Replay", func() error { _, err := s.Replay(ctx, f); return err }},
	} {
		tr.queries.Store(0)
		tr.batches.Store(0)
		if err := read.call(); err != nil {
			t.Fatalf("%s: %v", read.name, err)
		}
		if q, b := tr.queries.Load(), tr.batches.Load(); q != 1 || b != 1 {
			t.Errorf("%s sent %d statements one at a time and %d pipelines, want 1 (the pinned BEGIN) and 1", read.name, q, b)
		}
	}
}

// tripCounter counts the statements a connection sends alone and the
// pipelines (batches) it sends.
type tripCounter struct{ queries, batches atomic.Int64 }

func (c *tripCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.queries.Add(1)
	return ctx
}

func (c *tripCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *tripCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.batches.Add(1)
	return ctx
}

func (c *tripCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (c *tripCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}
