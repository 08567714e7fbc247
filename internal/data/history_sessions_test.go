package data_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// windowSessions builds, through the real protocol, one session of each
// relation to a window [Since, Until) the test reads between its steps on
// the server clock, and returns the window and the sessions that belong to
// it, in key order.
func windowSessions(t *testing.T, s *data.Store) (since, until time.Time, want []data.Key) {
	t.Helper()
	ctx := context.Background()
	k := func(sess string) data.Key { return data.Key{Account: "acme", Session: sess} }
	now := func() time.Time {
		at, err := s.ServerTime(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return at
	}
	release := func(key data.Key, run uuid.UUID) {
		if ok, err := s.Release(ctx, key, run); err != nil || !ok {
			t.Fatalf("Release(%s) = %v, %v", key, ok, err)
		}
	}
	before, across, live := uuid.New(), uuid.New(), uuid.New()
	mustAcquire(t, s, k("ended-before"), before, time.Minute)
	release(k("ended-before"), before)
	mustAcquire(t, s, k("held-across"), across, time.Minute)
	mustAcquire(t, s, k("live"), live, time.Minute)
	since = now()
	inside := uuid.New()
	if _, err := s.Acquire(ctx, k("ended-inside"), inside, time.Minute, "phone pid 7"); err != nil {
		t.Fatal(err)
	}
	release(k("ended-inside"), inside)
	// A ticket taken in the queue of a session nobody held in the window:
	// an event, no lease (written as lease.queue_event writes it).
	if _, err := s.Pool().Exec(ctx, `INSERT INTO lease.event (at, kind, account_id, session_id, run_id, holder, expires_at)
		VALUES (clock_timestamp(), 'queue_joined', 'acme', 'queued', gen_random_uuid(), 'desk', clock_timestamp() + interval '1 minute')`); err != nil {
		t.Fatal(err)
	}
	until = now()
	release(k("held-across"), across)
	mustAcquire(t, s, k("after"), uuid.New(), time.Minute)
	return since, until, []data.Key{k("ended-inside"), k("held-across"), k("live"), k("queued")}
}

// TestSessionsOfAWindow: the sessions of a window are those that had a
// lease in it or an event, ended or not (before, the timeline
// showed only the leases held now): one released inside it, one held across it
// and released after, one still held, one only queued for; not one
// ended before it nor one acquired after. Pages follow the key order both
// ways, and Match finds a session by id or by its holder's label.
func TestSessionsOfAWindow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := pgtest.New(t).Store(t)
	since, until, want := windowSessions(t, s)
	read := func(q data.SessionsQuery) []data.Key {
		t.Helper()
		q.Since, q.Until = since, until
		got, err := s.Sessions(ctx, q)
		if err != nil {
			t.Fatalf("Sessions(%+v) err = %v", q, err)
		}
		return got
	}
	for _, tt := range []struct {
		name string
		q    data.SessionsQuery
		want []data.Key
	}{
		{"all", data.SessionsQuery{Limit: 10}, want},
		{"first page", data.SessionsQuery{Limit: 2}, want[:2]},
		{"from a key", data.SessionsQuery{From: want[1], Limit: 2}, want[1:3]},
		{"after a key", data.SessionsQuery{From: want[1], After: true, Limit: 2}, want[2:4]},
		{"one back", data.SessionsQuery{From: want[2], Back: 1, Limit: 2}, want[1:3]},
		{"back past the first", data.SessionsQuery{From: want[1], Back: 5, Limit: 3}, want[:3]},
		{"last page", data.SessionsQuery{Last: true, Limit: 3}, want[1:]},
		{"by session id, any case", data.SessionsQuery{Match: "ENDED", Limit: 10}, want[:1]},
		{"by holder label", data.SessionsQuery{Match: "phone pid 7", Limit: 10}, want[:1]},
		{"nothing matches", data.SessionsQuery{Match: "nobody-has-this", Limit: 10}, nil},
	} {
		if got := read(tt.q); !slices.Equal(got, tt.want) {
			t.Errorf("%s: Sessions = %v, want %v", tt.name, got, tt.want)
		}
	}
	for _, q := range []data.SessionsQuery{
		{Since: since, Until: until},
		{Since: since, Until: until, Limit: data.MaxSessionsPage + 1},
		{Since: until, Until: since, Limit: 1},
		{Since: since, Until: until, Limit: 1, Back: -1},
	} {
		if _, err := s.Sessions(ctx, q); !errors.Is(err, data.ErrInvalid) {
			t.Errorf("Sessions(%s) err = %v, want ErrInvalid", fmt.Sprintf("%+v", q), err)
		}
	}
}
