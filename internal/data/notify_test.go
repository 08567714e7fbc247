package data_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

const marker = `{"marker":true}`

// collect LISTENs on conn and returns a function that sends a marker
// notification and returns every notification that arrived before it.
// NOTIFY is delivered in commit order, so the marker proves nothing else is
// on its way: "no notification" is asserted without sleeping.
func collect(t *testing.T, listen, send *pgx.Conn) func() []string {
	t.Helper()
	ctx := context.Background()
	if _, err := listen.Exec(ctx, "LISTEN lease_events"); err != nil {
		t.Fatal(err)
	}
	return func() []string {
		t.Helper()
		if _, err := send.Exec(ctx, `SELECT pg_notify('lease_events', $1)`, marker); err != nil {
			t.Fatal(err)
		}
		var got []string
		for {
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			n, err := listen.WaitForNotification(wctx)
			cancel()
			if err != nil {
				t.Fatalf("waiting for notifications: %v", err)
			}
			if n.Payload == marker {
				return got
			}
			got = append(got, n.Payload)
		}
	}
}

func TestEveryTransitionNotifiesOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s, sender := db.Store(t), db.Conn(t)
	drain := collect(t, db.Conn(t), sender)
	k := data.Key{Account: "acct", Session: `se"ss\ion`}
	a, b := uuid.New(), uuid.New()

	mustAcquire(t, s, k, a, time.Minute) // acquired
	if _, err := s.Acquire(ctx, k, b, time.Minute, ""); err == nil {
		t.Fatal("contended Acquire succeeded")
	}
	// A renewal is silent. This one also shortens the lease to 1 ms, so it
	// can be taken over below without depending on how loaded the machine is.
	exp, err := s.Renew(ctx, k, a, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if got := drain(); len(got) != 1 {
		t.Fatalf("after acquire, contended attempt and renewal: %d notifications %q, want 1", len(got), got)
	}
	pgtest.WaitServerPast(t, sender, exp)
	mustAcquire(t, s, k, b, time.Minute)                          // taken_over
	_, _ = s.Renew(ctx, k, a, time.Minute)                        // renew_rejected
	_, _ = s.Release(ctx, k, b)                                   // released
	mustAcquire(t, s, k, a, time.Minute)                          // acquired
	_, _ = s.ForceRelease(ctx, k, data.PublicRunID(a), "op says") // force_released
	got := drain()

	rows := events(t, s)
	if len(got) != 5 || len(rows) != 6 {
		t.Fatalf("got %d notifications (after the first) and %d event rows, want 5 and 6", len(got), len(rows))
	}
	for i, payload := range got {
		ev, err := data.DecodeEvent(payload)
		if err != nil {
			t.Fatalf("DecodeEvent(%q): %v", payload, err)
		}
		row := rows[i+1]
		if ev.ID != row.ID || ev.Kind != row.Kind || ev.Key != row.Key || ev.RunID != row.RunID ||
			ev.PrevRunID != row.PrevRunID || ev.Fence != row.Fence || !ev.ExpiresAt.Equal(row.ExpiresAt) ||
			ev.Holder != row.Holder || ev.Actor != row.Actor || ev.Reason != row.Reason {
			t.Errorf("notification %d = %+v, want the event row %+v", i, ev, row)
		}
		var fields map[string]any
		if err := json.Unmarshal([]byte(payload), &fields); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"id", "kind", "account_id", "session_id", "run_id", "prev_run_id", "fence", "expires_at", "holder"} {
			if _, ok := fields[f]; !ok {
				t.Errorf("payload %s lacks %q", payload, f)
			}
		}
	}
	wantKinds := []data.Kind{data.KindAcquired, data.KindTakenOver, data.KindRenewRejected,
		data.KindReleased, data.KindAcquired, data.KindForceReleased}
	if k := kinds(rows); !slices.Equal(k, wantKinds) {
		t.Errorf("event kinds = %v, want %v", k, wantKinds)
	}
}

func TestRenewalNotificationsAreOptIn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s, sender := db.Store(t), db.Conn(t)
	drain := collect(t, db.Conn(t), sender)
	k := data.Key{Account: "a", Session: "s"}
	a := uuid.New()
	mustAcquire(t, s, k, a, time.Minute)
	drain()

	if on, err := s.NotifyRenewals(ctx); err != nil || on {
		t.Fatalf("NotifyRenewals() = %v, %v; want false by default", on, err)
	}
	if err := data.SetNotifyRenewals(ctx, s.Pool(), true); err != nil {
		t.Fatal(err)
	}
	exp, err := s.Renew(ctx, k, a, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	got := drain()
	if len(got) != 1 {
		t.Fatalf("opted-in renewal sent %d notifications, want 1", len(got))
	}
	ev, err := data.DecodeEvent(got[0])
	if err != nil || ev.Kind != data.KindRenewed || ev.ID != 0 || !ev.ExpiresAt.Equal(exp) {
		t.Fatalf("renewal notification = %+v, %v; want kind renewed, id 0, expires %v", ev, err, exp)
	}
	if n := len(events(t, s)); n != 1 {
		t.Errorf("renewal wrote event rows: %d rows, want 1", n)
	}
	if err := data.SetNotifyRenewals(ctx, s.Pool(), false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Renew(ctx, k, a, time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := drain(); len(got) != 0 {
		t.Fatalf("renewal after opting out sent %d notifications, want 0", len(got))
	}
}

func TestTruncateTellsListenersToResync(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	s, sender := db.Store(t), db.Conn(t)
	drain := collect(t, db.Conn(t), sender)
	mustAcquire(t, s, data.Key{Account: "a", Session: "s"}, uuid.New(), time.Minute)
	if _, err := sender.Exec(context.Background(), "TRUNCATE lease.session_lease"); err != nil {
		t.Fatal(err)
	}
	got := drain()
	if len(got) != 2 {
		t.Fatalf("got %d notifications, want 2 (acquired, truncated)", len(got))
	}
	if ev, err := data.DecodeEvent(got[1]); err != nil || ev.Kind != data.KindTruncated {
		t.Fatalf("TRUNCATE notification = %+v, %v; want kind truncated", ev, err)
	}
}

// TestLargestPayloadFits acquires, takes over and force-releases with every
// text at its maximum length, made of the characters JSON escapes: each
// transition's NOTIFY must stay under PostgreSQL's 8000-byte limit, so all
// three arrive, in order, and none of them is reported as not sent.
func TestLargestPayloadFits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	var mu sync.Mutex
	var notSent []error
	s := pgtest.OpenStore(t, db.URL, data.Options{OnNotifyError: func(err error) {
		mu.Lock()
		defer mu.Unlock()
		notSent = append(notSent, err)
	}})
	sender := db.Conn(t)
	drain := collect(t, db.Conn(t), sender)
	k := data.Key{Account: strings.Repeat(`"`, data.MaxIDBytes), Session: strings.Repeat(`\`, data.MaxIDBytes)}
	holder := strings.Repeat(`"`, data.MaxHolderBytes)
	a, b := uuid.New(), uuid.New()
	if _, err := s.Acquire(ctx, k, a, time.Minute, holder); err != nil {
		t.Fatalf("Acquire with maximal ids: %v", err)
	}
	exp, err := s.Renew(ctx, k, a, time.Millisecond) // silent; shortened so that b can take it over
	if err != nil {
		t.Fatal(err)
	}
	pgtest.WaitServerPast(t, sender, exp)
	if _, err := s.Acquire(ctx, k, b, time.Minute, holder); err != nil {
		t.Fatalf("takeover with maximal ids: %v", err)
	}
	if ok, err := s.ForceRelease(ctx, k, data.PublicRunID(b), strings.Repeat(`"`, data.MaxReasonBytes)); err != nil || !ok {
		t.Fatalf("ForceRelease with maximal reason: %v, %v", ok, err)
	}
	got := drain()
	var gotKinds []data.Kind
	for _, p := range got {
		if len(p) >= 8000 {
			t.Errorf("payload is %d bytes, want < 8000", len(p))
		}
		ev, err := data.DecodeEvent(p)
		if err != nil {
			t.Errorf("DecodeEvent: %v", err)
		}
		gotKinds = append(gotKinds, ev.Kind)
	}
	want := []data.Kind{data.KindAcquired, data.KindTakenOver, data.KindForceReleased}
	if !slices.Equal(gotKinds, want) {
		t.Errorf("notifications %v, want %v", gotKinds, want)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, err := range notSent {
		t.Errorf("reported as not sent: %v", err)
	}
}

// TestNotificationLostAfterCommitIsReported: the connection breaks after an
// acquire committed and before its notification went out. Acquire returns
// the grant (the transition stands), Options.OnNotifyError is told, with
// the key, and the event is in lease.event for the listeners' catch-up,
// though no notification of it arrived.
func TestNotificationLostAfterCommitIsReported(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	reported := make(chan error, 4)
	s := pgtest.OpenStore(t, withParam(db.URL, "pool_max_conns=1"), data.Options{OnNotifyError: func(err error) { reported <- err }})
	var pid uint32
	if err := s.Pool().QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	admin := db.Conn(t)
	drain := collect(t, db.Conn(t), admin)
	data.SetAfterCommit(s, func() {
		var gone bool
		if err := admin.QueryRow(ctx, `SELECT pg_terminate_backend($1, 10000)`, pid).Scan(&gone); err != nil || !gone {
			t.Errorf("terminating the store's connection after the commit: %v, %v", gone, err)
		}
	})
	k := data.Key{Account: "acct", Session: "cut"}
	run := uuid.New()
	if _, err := s.Acquire(ctx, k, run, time.Minute, "cut-off"); err != nil {
		t.Fatalf("Acquire whose connection broke after the commit: %v, want the grant", err)
	}
	select {
	case err := <-reported:
		var ne *data.NotifyError
		if !errors.As(err, &ne) || ne.Key != k {
			t.Errorf("OnNotifyError got %v, want a *data.NotifyError for %v", err, k)
		}
	default:
		t.Fatal("Acquire returned and OnNotifyError was not called")
	}
	if got := drain(); len(got) != 0 {
		t.Errorf("notifications %q arrived, want none: the connection broke before it was sent", got)
	}
	data.SetAfterCommit(s, nil)
	evs := events(t, s)
	if len(evs) != 1 || evs[0].Kind != data.KindAcquired || evs[0].RunID != data.PublicRunID(run) {
		t.Errorf("lease.event = %+v, want the acquire of run %v", evs, data.PublicRunID(run))
	}
}
