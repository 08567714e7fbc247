package ui

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// BenchmarkScaleTimelineReads is the database side of the timeline at
// 100,000 leases with a history of 1000 transitions a second for the last
// 15 minutes (900,000 events, 9 a session): the read that opens the view
// (storeTimeline: the window's sessions from a key, 44 lanes, then
// OwnersAt at the window's start and EventsBetween for them), the lanes'
// read alone (data.Sessions) for windows now, past and narrow and for a
// session found by its id, and the read of a scrub step (OwnersAt at the
// cursor). Run it with
//
//	go test ./ui -run '^$' -bench ScaleTimelineReads -benchtime 20x
func BenchmarkScaleTimelineReads(b *testing.B) {
	ctx := context.Background()
	db := pgtest.New(b)
	conn := db.Conn(b)
	for _, q := range []string{
		`SET session_replication_role = replica`,
		fmt.Sprintf(`INSERT INTO lease.session_lease
			(account_id, session_id, run_id, holder, fence, acquired_at, renewed_at, expires_at)
			SELECT 'acct-' || lpad((g %% 1000)::text, 4, '0'), 'sess-' || lpad(g::text, 6, '0'), gen_random_uuid(),
			       'device-' || (g %% 500), nextval('lease.fence_seq'), now() - interval '1 hour', now(), now() + interval '1 hour'
			  FROM generate_series(1, %d) g`, scaleLeases),
		fmt.Sprintf(`INSERT INTO lease.event (at, kind, account_id, session_id, run_id, prev_run_id, fence, prev_fence, expires_at, prev_expires_at, holder)
			SELECT now() - interval '15 minutes' + g * interval '1 ms', 'taken_over',
			       'acct-' || lpad((g %% %[1]d %% 1000)::text, 4, '0'), 'sess-' || lpad((g %% %[1]d)::text, 6, '0'),
			       gen_random_uuid(), gen_random_uuid(), g + 1, g, now() + interval '1 minute', now() - interval '15 minutes' + g * interval '1 ms', 'device'
			  FROM generate_series(1, 900000) g`, scaleLeases),
		`RESET session_replication_role`,
		`ANALYZE lease.session_lease`,
		`ANALYZE lease.event`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			b.Fatalf("seed: %v", err)
		}
	}
	var now time.Time
	if err := conn.QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
		b.Fatal(err)
	}
	keys := make([]data.Key, 44)
	for i := range keys {
		n := 1 + i*997
		keys[i] = data.Key{Account: fmt.Sprintf("acct-%04d", n%1000), Session: fmt.Sprintf("sess-%06d", n)}
	}
	timeline, owners := storeTimeline(ctx, db.Store(b))
	// The view opens on the window's sessions from the one selected (here
	// keys[0]): 44 of them, read with their history.
	window := data.SessionsQuery{Since: now.Add(-15 * time.Minute), Until: now, From: keys[0], Limit: 44}
	b.Run("open", func(b *testing.B) {
		var h History
		for b.Loop() {
			var err error
			if h, err = timeline(LanesQuery{Sessions: window, Since: now.Add(-22*time.Minute + 30*time.Second), Until: now}); err != nil {
				b.Fatal(err)
			}
		}
		if len(h.Keys) != 44 {
			b.Fatalf("%d lanes, want 44", len(h.Keys))
		}
		b.ReportMetric(float64(len(h.Events)), "events")
	})
	store := db.Store(b)
	// The lanes alone: the window's sessions from a key, a window in the
	// past (its sessions' events go on after it), a ten-second window (most
	// sessions have no event in it: the walk passes them), and found by a
	// session id typed into the filter (the walk passes every session).
	past := window
	past.Since, past.Until = now.Add(-10*time.Minute), now.Add(-9*time.Minute)
	narrow := window
	narrow.Since = now.Add(-10 * time.Second)
	found := window
	found.From, found.Match = data.Key{}, keys[20].Session
	for name, q := range map[string]data.SessionsQuery{"sessions": window, "sessions-past": past, "sessions-10s": narrow, "sessions-found": found} {
		b.Run(name, func(b *testing.B) {
			var got []data.Key
			for b.Loop() {
				var err error
				if got, err = store.Sessions(ctx, q); err != nil {
					b.Fatal(err)
				}
			}
			if len(got) == 0 {
				b.Fatal("no sessions")
			}
			b.ReportMetric(float64(len(got)), "lanes")
		})
	}
	for name, f := range map[string]data.HistoryFilter{
		"events-of-keys": {Keys: keys, Since: now.Add(-15 * time.Minute)},
		"truncates-scan": {Kinds: []data.Kind{data.KindTruncated}, Since: now.Add(-15 * time.Minute)},
		"truncates":      {Keys: []data.Key{{}}, Kinds: []data.Kind{data.KindTruncated}, Since: now.Add(-15 * time.Minute)},
	} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := store.EventsBetween(ctx, f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("owners-at-start", func(b *testing.B) {
		for b.Loop() {
			if _, err := owners(mkeys(keys), now.Add(-15*time.Minute+time.Second)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("scrub-step", func(b *testing.B) {
		at := now.Add(-5 * time.Minute)
		for b.Loop() {
			at = at.Add(-time.Second)
			if _, err := owners(mkeys(keys), at); err != nil {
				b.Fatal(err)
			}
		}
	})
}
