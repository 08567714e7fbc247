package pgtest

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
)

// HistoryProbe is an instant of a KnownHistory and what "as of" that
// instant must say about its session: who held it then, or that nobody
// did.
type HistoryProbe struct {
	Name    string
	At      time.Time
	Held    bool      // the lease's row existed (held, or expired and not taken over)
	Run     uuid.UUID // public run id
	Fence   int64
	Expired bool
	// ExpiresAt is exact when ExpiryKnown; otherwise the latest expiry
	// recorded before At (a lower bound).
	ExpiresAt   time.Time
	ExpiryKnown bool
}

// KnownHistory is a session's history with every kind of transition, made
// on a real database, and the instants just before and at each of its
// events (and expiries), with what they must show.
type KnownHistory struct {
	Key    data.Key
	Start  time.Time // the oldest event: a marker session's acquire, before Key's history
	Events []data.Event
	Probes []HistoryProbe
}

// BuildKnownHistory makes, on db, through s (a superuser's store): a
// marker session acquired and released (so the history starts before
// Key's), then on Key: run A acquires (TTL 1s), renews once, expires, its
// renewal is rejected (a zombie on its own expired lease), run B takes over
// (TTL 1h), A's renewal is rejected again (held by B), B is force-released,
// run C acquires (TTL 1s) and expires without a successor. It waits on the
// database clock, never on sleeps.
func BuildKnownHistory(t testing.TB, db DB, s *data.Store) KnownHistory {
	t.Helper()
	h := KnownHistory{Key: data.Key{Account: "acct", Session: "conv"}}
	h.Start, h.Events = writeKnownHistory(t, db, s, h.Key)
	h.Probes = knownProbes(t, h.Events)
	return h
}

// writeKnownHistory writes BuildKnownHistory's transitions of k (after a
// marker session's acquire and release) and returns when the history
// starts and k's events, checked to be the six it wrote.
func writeKnownHistory(t testing.TB, db DB, s *data.Store, k data.Key) (start time.Time, events []data.Event) {
	t.Helper()
	ctx := context.Background()
	marker := data.Key{Account: "acct", Session: "marker"}
	mr := uuid.New()
	if _, err := s.Acquire(ctx, marker, mr, time.Minute, "marker"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Release(ctx, marker, mr); err != nil {
		t.Fatal(err)
	}
	a, b, c := uuid.New(), uuid.New(), uuid.New()
	if _, err := s.Acquire(ctx, k, a, time.Second, "run-a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Renew(ctx, k, a, time.Second); err != nil {
		t.Fatal(err)
	}
	conn := db.Conn(t)
	WaitExpired(t, conn, k)
	if _, err := s.Renew(ctx, k, a, time.Second); err == nil {
		t.Fatal("renewal of an expired lease succeeded")
	}
	if _, err := s.Acquire(ctx, k, b, time.Hour, "run-b"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Renew(ctx, k, a, time.Second); err == nil {
		t.Fatal("renewal of a lease taken over succeeded")
	}
	if ok, err := s.ForceReleaseAny(ctx, k, "test"); err != nil || !ok {
		t.Fatalf("ForceReleaseAny = %v, %v", ok, err)
	}
	if _, err := s.Acquire(ctx, k, c, time.Second, "run-c"); err != nil {
		t.Fatal(err)
	}
	WaitExpired(t, conn, k)

	evs, err := s.EventsBetween(ctx, data.HistoryFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Key == k {
			events = append(events, ev)
		}
	}
	want := []data.Kind{data.KindAcquired, data.KindRenewRejected, data.KindTakenOver,
		data.KindRenewRejected, data.KindForceReleased, data.KindAcquired}
	if len(events) != len(want) {
		t.Fatalf("%d events on %v, want %d: %v", len(events), k, len(want), events)
	}
	for i, ev := range events {
		if ev.Kind != want[i] {
			t.Fatalf("event %d is %s, want %s", i, ev.Kind, want[i])
		}
	}
	return evs[0].At, events
}

// knownProbes are the instants of the known history e (writeKnownHistory's
// six events) and who held its session at each.
func knownProbes(t testing.TB, e []data.Event) []HistoryProbe {
	t.Helper()
	acqA, rejA, takeB, rejB, forceB, acqC := e[0], e[1], e[2], e[3], e[4], e[5]
	expA := rejA.ExpiresAt // A's expiry after its renewal, as the rejection recorded it
	us := time.Microsecond
	nobody := func(name string, at time.Time) HistoryProbe { return HistoryProbe{Name: name, At: at} }
	heldA := func(name string, at time.Time, expired bool) HistoryProbe {
		p := HistoryProbe{Name: name, At: at, Held: true, Run: acqA.RunID, Fence: acqA.Fence, Expired: expired,
			ExpiresAt: expA, ExpiryKnown: true}
		if !expired { // renewed at a time the history does not keep
			p.ExpiresAt, p.ExpiryKnown = acqA.ExpiresAt, false
		}
		return p
	}
	heldB := func(name string, at time.Time) HistoryProbe {
		return HistoryProbe{Name: name, At: at, Held: true, Run: takeB.RunID, Fence: takeB.Fence,
			ExpiresAt: takeB.ExpiresAt, ExpiryKnown: true}
	}
	heldC := func(name string, at time.Time, expired bool) HistoryProbe {
		return HistoryProbe{Name: name, At: at, Held: true, Run: acqC.RunID, Fence: acqC.Fence, Expired: expired,
			ExpiresAt: acqC.ExpiresAt, ExpiryKnown: true}
	}
	probes := []HistoryProbe{
		nobody("before the acquire", acqA.At.Add(-us)),
		{Name: "at the acquire", At: acqA.At, Held: true, Run: acqA.RunID, Fence: acqA.Fence,
			ExpiresAt: acqA.ExpiresAt, ExpiryKnown: true}, // recorded then; renewed later
		heldA("just after the acquire", acqA.At.Add(us), false),
		heldA("just before A expires", expA.Add(-us), false),
		heldA("at A's expiry", expA, true),
		heldA("before the rejected renewal", rejA.At.Add(-us), true),
		heldA("at the rejected renewal", rejA.At, true),
		heldA("before the takeover", takeB.At.Add(-us), true),
		heldB("at the takeover", takeB.At),
		heldB("before the zombie's renewal", rejB.At.Add(-us)),
		heldB("at the zombie's renewal", rejB.At),
		heldB("before the forced release", forceB.At.Add(-us)),
		nobody("at the forced release", forceB.At),
		nobody("before the second acquire", acqC.At.Add(-us)),
		heldC("at the second acquire", acqC.At, false),
		heldC("just before C expires", acqC.ExpiresAt.Add(-us), false),
		heldC("at C's expiry, no successor", acqC.ExpiresAt, true),
	}
	if !takeB.PrevExpiresAt.Equal(expA) {
		t.Fatalf("takeover's prev_expires_at %v, want A's last expiry %v", takeB.PrevExpiresAt, expA)
	}
	return probes
}
