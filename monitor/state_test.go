package monitor

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
)

var (
	t0   = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	keyA = data.Key{Account: "acme", Session: "s1"}
	keyB = data.Key{Account: "acme", Session: "s2"}
	runs = []uuid.UUID{uuid.MustParse("11111111-1111-4111-8111-111111111111"),
		uuid.MustParse("22222222-2222-4222-8222-222222222222"),
		uuid.MustParse("33333333-3333-4333-8333-333333333333")}
)

func lease(k data.Key, run uuid.UUID, fence int64, renewed time.Time, ttl time.Duration) data.Lease {
	return data.Lease{Key: k, RunID: run, Holder: "h", Fence: fence, AcquiredAt: renewed, RenewedAt: renewed, ExpiresAt: renewed.Add(ttl)}
}

func acquired(id int64, k data.Key, run uuid.UUID, fence int64, at time.Time) data.Event {
	return data.Event{ID: id, Kind: data.KindAcquired, Key: k, RunID: run, Fence: fence, At: at, ExpiresAt: at.Add(15 * time.Second), Holder: "h"}
}

func clockAt(server time.Time) data.Clock { return data.NewClock(server, server, server) }

func syncOf(after int64, leases []data.Lease, evs ...data.Event) data.Sync {
	return data.Sync{Snapshot: data.Snapshot{Leases: leases, Clock: clockAt(t0)}, Events: evs, After: after}
}

func ids(evs []data.Event) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

func equalIDs(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestApplyEventTransitions(t *testing.T) {
	t.Parallel()
	s := NewState(Config{})
	s.ApplySync(syncOf(0, nil), t0)
	steps := []struct {
		name      string
		ev        data.Event
		wantNew   bool
		wantRun   uuid.UUID // uuid.Nil: no lease for keyA
		wantFence int64
	}{
		{"acquired", acquired(1, keyA, runs[0], 10, t0), true, runs[0], 10},
		{"duplicate ignored", acquired(1, keyA, runs[0], 10, t0), false, runs[0], 10},
		{"zombie changes nothing", data.Event{ID: 2, Kind: data.KindRenewRejected, Key: keyA, RunID: runs[2]}, true, runs[0], 10},
		{"taken over", data.Event{ID: 3, Kind: data.KindTakenOver, Key: keyA, RunID: runs[1], PrevRunID: runs[0], Fence: 11, PrevFence: 10, At: t0, ExpiresAt: t0.Add(time.Minute)}, true, runs[1], 11},
		{"release by the old run ignored", data.Event{ID: 4, Kind: data.KindReleased, Key: keyA, RunID: runs[0]}, true, runs[1], 11},
		{"force released", data.Event{ID: 5, Kind: data.KindForceReleased, Key: keyA, RunID: runs[1], Actor: "alice", Reason: "stuck"}, true, uuid.Nil, 0},
	}
	for _, st := range steps {
		if got := s.ApplyEvent(st.ev, t0); got != st.wantNew {
			t.Errorf("%s: ApplyEvent = %v, want %v", st.name, got, st.wantNew)
		}
		l, ok := s.Lease(keyA)
		if st.wantRun == uuid.Nil {
			if ok {
				t.Errorf("%s: lease = %+v, want none", st.name, l)
			}
			continue
		}
		if !ok || l.RunID != st.wantRun || l.Fence != st.wantFence {
			t.Errorf("%s: lease = %v %+v, want run %v fence %d", st.name, ok, l, st.wantRun, st.wantFence)
		}
	}
	if got, want := ids(s.Events()), []int64{5, 4, 3, 2, 1}; !equalIDs(got, want) {
		t.Errorf("events = %v, want %v (newest first)", got, want)
	}
	if s.Applied() != 5 || s.Duplicates() != 1 {
		t.Errorf("applied, duplicates = %d, %d, want 5, 1", s.Applied(), s.Duplicates())
	}
}

func TestSyncThenRepeatedNotificationsAreIgnored(t *testing.T) {
	t.Parallel()
	s := NewState(Config{})
	// The resync already shows run 1 holding keyA after events 7 and 8.
	l := lease(keyA, runs[1], 12, t0, 15*time.Second)
	fresh := s.ApplySync(syncOf(5, []data.Lease{l},
		acquired(7, keyA, runs[0], 11, t0.Add(-time.Minute)),
		data.Event{ID: 8, Kind: data.KindTakenOver, Key: keyA, RunID: runs[1], PrevRunID: runs[0], Fence: 12, At: t0, ExpiresAt: l.ExpiresAt},
	), t0)
	if got, want := ids(fresh), []int64{7, 8}; !equalIDs(got, want) {
		t.Errorf("fresh = %v, want %v", got, want)
	}
	// The notification of event 7 arrives after the resync: it must not
	// bring run 0 back.
	if s.ApplyEvent(acquired(7, keyA, runs[0], 11, t0.Add(-time.Minute)), t0) {
		t.Error("ApplyEvent(7) = true after the resync returned it")
	}
	if got, _ := s.Lease(keyA); got.RunID != runs[1] {
		t.Errorf("lease run = %v, want %v", got.RunID, runs[1])
	}
	if s.Baseline() != 5 || !s.Seen(7) || !s.Seen(8) || s.Seen(6) {
		t.Errorf("baseline %d seen(6,7,8) = %v %v %v, want 5 false true true", s.Baseline(), s.Seen(6), s.Seen(7), s.Seen(8))
	}
}

func TestLateCommittedEventIsRecordedInOrder(t *testing.T) {
	t.Parallel()
	s := NewState(Config{})
	s.ApplySync(syncOf(0, nil, acquired(1, keyA, runs[0], 1, t0), acquired(3, keyB, runs[1], 3, t0)), t0)
	// Event 2 committed after 3: the next resync's window returns it.
	fresh := s.ApplySync(syncOf(0, nil,
		acquired(1, keyA, runs[0], 1, t0), acquired(2, data.Key{Account: "x", Session: "y"}, runs[2], 2, t0), acquired(3, keyB, runs[1], 3, t0)), t0)
	if got, want := ids(fresh), []int64{2}; !equalIDs(got, want) {
		t.Errorf("fresh = %v, want %v", got, want)
	}
	if got, want := ids(s.Events()), []int64{3, 2, 1}; !equalIDs(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}
	if s.Applied() != 3 {
		t.Errorf("applied = %d, want 3", s.Applied())
	}
}

func TestEventsAreBounded(t *testing.T) {
	t.Parallel()
	s := NewState(Config{EventLimit: 3})
	for id := int64(1); id <= 10; id++ {
		s.ApplyEvent(data.Event{ID: id, Kind: data.KindRenewRejected, Key: keyA, RunID: runs[0]}, t0)
	}
	s.ApplyEvent(data.Event{ID: 4, Kind: data.KindRenewRejected, Key: keyA, RunID: runs[0]}, t0) // seen
	s.ApplyEvent(data.Event{ID: 0, Kind: data.KindRenewed, Key: keyA, RunID: runs[0]}, t0)       // not an event row
	if got, want := ids(s.Events()), []int64{10, 9, 8}; !equalIDs(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}
}

func TestRenewalsExtendOnlyTheSameRun(t *testing.T) {
	t.Parallel()
	l := lease(keyA, runs[0], 5, t0, 15*time.Second)
	tests := []struct {
		name       string
		apply      func(s *State)
		wantExpiry time.Time
	}{
		{"delta extends", func(s *State) {
			s.ApplyDelta(data.Snapshot{Leases: []data.Lease{lease(keyA, runs[0], 5, t0.Add(5*time.Second), 15*time.Second)}}, t0)
		}, t0.Add(20 * time.Second)},
		{"delta of another run ignored", func(s *State) {
			s.ApplyDelta(data.Snapshot{Leases: []data.Lease{lease(keyA, runs[1], 6, t0.Add(5*time.Second), 15*time.Second)}}, t0)
		}, t0.Add(15 * time.Second)},
		{"older delta does not shorten", func(s *State) {
			s.ApplyDelta(data.Snapshot{Leases: []data.Lease{lease(keyA, runs[0], 5, t0.Add(-5*time.Second), 15*time.Second)}}, t0)
		}, t0.Add(15 * time.Second)},
		{"renewed notification extends", func(s *State) {
			s.ApplyEvent(data.Event{Kind: data.KindRenewed, Key: keyA, RunID: runs[0], Fence: 5, At: t0.Add(time.Second), ExpiresAt: t0.Add(16 * time.Second)}, t0)
		}, t0.Add(16 * time.Second)},
		{"delta of a released lease does not revive it", func(s *State) {
			s.ApplyEvent(data.Event{ID: 9, Kind: data.KindReleased, Key: keyA, RunID: runs[0]}, t0)
			s.ApplyDelta(data.Snapshot{Leases: []data.Lease{lease(keyA, runs[0], 5, t0.Add(5*time.Second), 15*time.Second)}}, t0)
		}, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewState(Config{})
			s.ApplySync(syncOf(0, []data.Lease{l}), t0)
			tt.apply(s)
			got, ok := s.Lease(keyA)
			if tt.wantExpiry.IsZero() {
				if ok {
					t.Errorf("lease = %+v, want none", got)
				}
				return
			}
			if !got.ExpiresAt.Equal(tt.wantExpiry) {
				t.Errorf("expires at = %v, want %v", got.ExpiresAt, tt.wantExpiry)
			}
		})
	}
}

func TestCounts(t *testing.T) {
	t.Parallel()
	s := NewState(Config{})
	s.ApplySync(syncOf(0, []data.Lease{
		lease(keyA, runs[0], 1, t0, 20*time.Second),                                                   // 20 s left: held
		lease(keyB, runs[1], 2, t0.Add(-18*time.Second), 20*time.Second),                              // 2 s left: expiring
		lease(data.Key{Account: "b", Session: "x"}, runs[2], 3, t0.Add(-time.Minute), 20*time.Second), // expired
	}), t0)
	got := s.Counts(t0)
	if want := (Counts{Held: 2, ExpiringSoon: 1, Expired: 1}); got != want {
		t.Errorf("Counts = %+v, want %+v", got, want)
	}
}

// TestCountIndexKeepsItsLeases: an index taken earlier counts the leases as
// they were then, whatever the State does after (the UI counts with the
// index of the rows it shows).
func TestCountIndexKeepsItsLeases(t *testing.T) {
	t.Parallel()
	s := NewState(Config{})
	s.ApplySync(syncOf(0, []data.Lease{
		lease(keyA, runs[0], 1, t0, 20*time.Second),
		lease(keyB, runs[1], 2, t0, 20*time.Second),
	}), t0)
	before := s.CountIndex()
	s.ApplyEvent(data.Event{ID: 1, Kind: data.KindReleased, Key: keyA, RunID: runs[0]}, t0)
	s.ApplyEvent(data.Event{ID: 2, Kind: data.KindAcquired, Key: data.Key{Account: "c", Session: "y"}, RunID: runs[2], Fence: 3,
		At: t0.Add(-900 * time.Millisecond), ExpiresAt: t0.Add(100 * time.Millisecond)}, t0) // a tenth of its TTL left: expiring soon
	after := s.CountIndex()
	if got, want := before.At(t0), (Counts{Held: 2}); got != want {
		t.Errorf("the earlier index counts %+v, want %+v", got, want)
	}
	if got, want := after.At(t0), (Counts{Held: 2, ExpiringSoon: 1}); got != want {
		t.Errorf("the later index counts %+v, want %+v", got, want)
	}
	if got, want := s.Counts(t0), after.At(t0); got != want {
		t.Errorf("Counts = %+v, want the later index's %+v", got, want)
	}
}

func TestHealth(t *testing.T) {
	t.Parallel()
	boom := errors.New("connection refused")
	tests := []struct {
		name      string
		conn      data.ListenerState
		syncedAgo time.Duration // <0: never synced
		now       time.Time
		wantLink  Link
		wantStale bool
		every     time.Duration // the feed's read interval (0: not told)
	}{
		{"connecting", data.ListenerState{Status: data.ListenerConnecting, Since: t0}, -1, t0, LinkConnecting, true, 0},
		{"live", data.ListenerState{Status: data.ListenerLive, Since: t0}, time.Second, t0, LinkLive, false, 0},
		{"live, last read 2.5s ago", data.ListenerState{Status: data.ListenerLive, Since: t0}, 2500 * time.Millisecond, t0, LinkLive, false, time.Second},
		// The listener has not noticed yet, but the reads go unanswered.
		{"live, no answer for 2.6s", data.ListenerState{Status: data.ListenerLive, Since: t0}, 2600 * time.Millisecond, t0, LinkReconnecting, false, time.Second},
		{"live, no answer, not told the interval", data.ListenerState{Status: data.ListenerLive, Since: t0}, 2600 * time.Millisecond, t0, LinkReconnecting, false, 0},
		{"live, no answer for 4s", data.ListenerState{Status: data.ListenerLive, Since: t0}, 4 * time.Second, t0, LinkReconnecting, true, time.Second},
		{"live, no answer for 8s", data.ListenerState{Status: data.ListenerLive, Since: t0}, 8 * time.Second, t0, LinkDown, true, time.Second},
		{"poll, no answer for 3s", data.ListenerState{Status: data.ListenerPolling, Poll: time.Second, Since: t0}, 3 * time.Second, t0, LinkReconnecting, false, time.Second},
		{"live, reading every 5s, 6s ago", data.ListenerState{Status: data.ListenerLive, Since: t0}, 6 * time.Second, t0, LinkLive, true, 5 * time.Second},
		{"reconnecting", data.ListenerState{Status: data.ListenerReconnecting, Attempt: 1, Err: boom, Since: t0}, time.Second, t0.Add(time.Second), LinkReconnecting, false, 0},
		{"down after attempts", data.ListenerState{Status: data.ListenerReconnecting, Attempt: 3, Err: boom, Since: t0}, time.Second, t0.Add(time.Second), LinkDown, false, 0},
		{"down after time", data.ListenerState{Status: data.ListenerReconnecting, Attempt: 1, Err: boom, Since: t0}, 6 * time.Second, t0.Add(6 * time.Second), LinkDown, true, 0},
		{"stopped", data.ListenerState{Status: data.ListenerStopped}, time.Second, t0, LinkDown, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewState(Config{})
			at := tt.now
			if tt.syncedAgo >= 0 {
				s.ApplySync(syncOf(0, nil), tt.now.Add(-tt.syncedAgo))
			}
			s.Apply(Batch{Conn: tt.conn, ReadInterval: tt.every}, at)
			h := s.Health(tt.now)
			if h.Link != tt.wantLink || h.Stale != tt.wantStale {
				t.Errorf("Health = %v stale %v, want %v stale %v", h.Link, h.Stale, tt.wantLink, tt.wantStale)
			}
			if noAnswer := tt.conn.Status != data.ListenerReconnecting && tt.conn.Status != data.ListenerStopped &&
				tt.wantLink != LinkLive && tt.wantLink != LinkConnecting; (h.NoAnswer > 0) != noAnswer {
				t.Errorf("Health.NoAnswer = %v, want it set: %v", h.NoAnswer, noAnswer)
			}
			if tt.conn.Err != nil && !errors.Is(h.Err, tt.conn.Err) {
				t.Errorf("Health.Err = %v, want %v", h.Err, tt.conn.Err)
			}
		})
	}
}

func TestEventsPerSecond(t *testing.T) {
	t.Parallel()
	s := NewState(Config{})
	for i := range 20 {
		s.ApplyEvent(data.Event{ID: int64(i + 1), Kind: data.KindRenewRejected, Key: keyA, RunID: runs[0]}, t0.Add(time.Duration(i)*250*time.Millisecond))
	}
	if got, want := s.EventsPerSecond(t0.Add(5*time.Second)), 2.0; got != want {
		t.Errorf("EventsPerSecond = %v, want %v", got, want)
	}
	if got := s.EventsPerSecond(t0.Add(time.Minute)); got != 0 {
		t.Errorf("EventsPerSecond a minute later = %v, want 0", got)
	}
}

func TestCloneIsIndependent(t *testing.T) {
	t.Parallel()
	s := NewState(Config{})
	s.ApplySync(syncOf(0, []data.Lease{lease(keyA, runs[0], 1, t0, time.Minute)}), t0)
	c := s.Clone()
	s.ApplyEvent(data.Event{ID: 1, Kind: data.KindReleased, Key: keyA, RunID: runs[0]}, t0)
	if _, ok := c.Lease(keyA); !ok || len(c.Events()) != 0 || c.Seen(1) {
		t.Errorf("clone changed with the original")
	}
}

// TestCountsMatchesTheDefinition compares the indexed Counts with a direct
// reading of its definition over random leases and instants.
func TestCountsMatchesTheDefinition(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	s := NewState(Config{})
	var leases []data.Lease
	for i := range 300 {
		renewed := t0.Add(time.Duration(rng.IntN(60000)-30000) * time.Millisecond)
		ttl := time.Duration(rng.IntN(20000)) * time.Millisecond
		leases = append(leases, lease(data.Key{Account: "a", Session: fmt.Sprint(i)}, runs[0], int64(i), renewed, ttl))
	}
	s.ApplySync(syncOf(0, leases), t0)
	for range 200 {
		now := t0.Add(time.Duration(rng.IntN(80000)-40000) * time.Millisecond)
		var want Counts
		for _, l := range leases {
			switch {
			case !l.ExpiresAt.After(now):
				want.Expired++
			default:
				want.Held++
				if s.Fraction(l, now) < s.ExpiringSoon() {
					want.ExpiringSoon++
				}
			}
		}
		if got := s.Counts(now); got != want {
			t.Fatalf("Counts(%v) = %+v, want %+v", now, got, want)
		}
	}
}
