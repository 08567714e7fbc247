package data_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// rejectionsRecorded is the most renew_rejected events one lease.renew_many
// call writes (sql/functions.sql).
const rejectionsRecorded = 100

// TestRenewManyBoundsWhatItWrites: a lease_app renewing
// many of its own expired leases in one lease.renew_many call wrote a
// renew_rejected event and a notification for each, again on every call
// (10,000 a call, 1.4-2.3 s each). Now one call writes at most
// rejectionsRecorded events, and a run's rejection on a key is written once
// per grant it meets there: the next call writes only the ones not written
// yet, the one after nothing; lease.renew of one of them nothing either. A
// run that meets a new grant on the key (taken over) is written once more,
// as a zombie beside another holder. Every rejection is in the call's
// result all the same.
func TestRenewManyBoundsWhatItWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	dsn, _ := pgtest.Login(t, db, "lease_app")
	s := pgtest.OpenStore(t, dsn, data.Options{})
	drain := collect(t, db.Conn(t), db.Conn(t))

	const n = rejectionsRecorded + 50
	items := make([]data.RenewItem, n)
	runs := make([]uuid.UUID, n)
	for i := range items {
		runs[i] = uuid.New()
		items[i] = data.RenewItem{Key: data.Key{Account: "bulk", Session: fmt.Sprintf("k%d", i)}, RunID: runs[i]}
	}
	var last time.Time
	if err := conn.QueryRow(ctx, `SELECT max(a.expires_at) FROM unnest($1::uuid[]) WITH ORDINALITY AS u(r, i),
		LATERAL lease.acquire('bulk', 'k' || (u.i - 1), u.r, '1 millisecond', 'bulk') a`, runs).Scan(&last); err != nil {
		t.Fatal(err)
	}
	pgtest.WaitServerPast(t, conn, last)
	drain()
	written := func() int {
		t.Helper()
		var c int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM lease.event WHERE kind = 'renew_rejected'`).Scan(&c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	notified := func() int {
		t.Helper()
		c := 0
		for _, p := range drain() {
			if strings.Contains(p, `"kind":"renew_rejected"`) {
				c++
			}
		}
		return c
	}
	renewAll := func(call int) {
		t.Helper()
		got, err := s.RenewMany(ctx, time.Minute, items)
		if err != nil {
			t.Fatalf("RenewMany #%d: %v", call, err)
		}
		for i, r := range got {
			if !errors.Is(r.Err, data.ErrNotHeld) {
				t.Fatalf("RenewMany #%d item %d: %v, want ErrNotHeld", call, i, r.Err)
			}
		}
	}

	for call, want := range []int{rejectionsRecorded, n - rejectionsRecorded, 0} {
		before := written()
		renewAll(call + 1)
		if got := written() - before; got != want {
			t.Errorf("RenewMany #%d of %d expired leases wrote %d renew_rejected events, want %d", call+1, n, got, want)
		}
		if got := notified(); got != want {
			t.Errorf("RenewMany #%d of %d expired leases sent %d notifications, want %d", call+1, n, got, want)
		}
	}
	before := written()
	if _, err := s.Renew(ctx, items[0].Key, runs[0], time.Minute); !errors.Is(err, data.ErrNotHeld) {
		t.Fatalf("Renew of an expired lease: %v, want ErrNotHeld", err)
	}
	if got := written() - before; got != 0 {
		t.Errorf("Renew of a rejection written already wrote %d events, want 0", got)
	}

	// Taken over: the zombie meets a new grant, written once more.
	taker := uuid.New()
	mustAcquire(t, s, items[0].Key, taker, time.Minute)
	for i := range 3 {
		if _, err := s.Renew(ctx, items[0].Key, runs[0], time.Minute); !errors.Is(err, data.ErrNotHeld) {
			t.Fatalf("zombie Renew #%d after the takeover: %v, want ErrNotHeld", i+1, err)
		}
	}
	var reasons []string
	rows, err := conn.Query(ctx, `SELECT reason FROM lease.event WHERE kind = 'renew_rejected' AND session_id = 'k0' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			t.Fatal(err)
		}
		reasons = append(reasons, r)
	}
	if want := []string{"lease expired", "held by run " + data.PublicRunID(taker).String()}; fmt.Sprint(reasons) != fmt.Sprint(want) {
		t.Errorf("k0's renew_rejected reasons %q, want %q", reasons, want)
	}
}
