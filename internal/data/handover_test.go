package data_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// askEvents returns key's events of the hand-over kinds and of ownership, oldest first.
func keyEvents(t *testing.T, s *data.Store, k data.Key) []data.Event {
	t.Helper()
	var out []data.Event
	for _, e := range events(t, s) {
		if e.Key == k {
			out = append(out, e)
		}
	}
	return out
}

// TestHandOverMovesTheLeaseToTheAsker: an ask is recorded once (repeats
// write nothing), a second asker is refused with who asked and until when
// (and a plain acquire's HeldError says so too), and the holder's hand-over
// moves the lease to the asker's public run id with a higher fence in one
// transaction: the asker's own Acquire returns that grant, the old holder's
// renewal is refused, and the history has handover_asked then handed_over,
// each naming both runs.
func TestHandOverMovesTheLeaseToTheAsker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	holderS, askerS, otherS := db.Store(t), db.Store(t), db.Store(t)
	k := data.Key{Account: "acme", Session: "s1"}
	holder, asker, other := uuid.New(), uuid.New(), uuid.New()
	g := mustAcquire(t, holderS, k, holder, time.Hour)

	a, err := askerS.AskHandover(ctx, k, asker, time.Hour, "phone")
	if err != nil || a.Outcome != data.AskAsked {
		t.Fatalf("AskHandover = %+v, %v; want asked", a, err)
	}
	if a.Ask.RunID != data.PublicRunID(asker) || a.Ask.HolderRunID != data.PublicRunID(holder) || a.Ask.Holder != "phone" {
		t.Fatalf("ask = %+v, want asker %s, holder %s", a.Ask, data.PublicRunID(asker), data.PublicRunID(holder))
	}
	n := len(keyEvents(t, askerS, k))
	if again, err := askerS.AskHandover(ctx, k, asker, time.Hour, "phone"); err != nil || again.Outcome != data.AskPending {
		t.Fatalf("asking again = %+v, %v; want pending", again, err)
	}
	busy, err := otherS.AskHandover(ctx, k, other, time.Hour, "tablet")
	if err != nil || busy.Outcome != data.AskBusy || busy.Ask.RunID != data.PublicRunID(asker) || busy.Ask.Until.IsZero() {
		t.Fatalf("second asker = %+v, %v; want busy naming the first asker and its deadline", busy, err)
	}
	if got := len(keyEvents(t, askerS, k)); got != n {
		t.Fatalf("a repeated ask and a refused one wrote %d events, want none", got-n)
	}
	_, err = otherS.Acquire(ctx, k, other, time.Minute, "tablet")
	var held *data.HeldError
	if !errors.As(err, &held) || held.Ask == nil || held.Ask.RunID != data.PublicRunID(asker) || held.Ask.Holder != "phone" {
		t.Fatalf("Acquire while asked: %v (ask %+v), want a HeldError naming the pending ask", err, held)
	}

	h, err := holderS.HandOver(ctx, k, holder, time.Minute)
	if err != nil || h.Outcome != data.AskHandedOver || h.Fence <= g.Fence || h.Ask.RunID != data.PublicRunID(asker) {
		t.Fatalf("HandOver = %+v, %v; want handed_over to the asker with a fence above %d", h, err, g.Fence)
	}
	got, err := askerS.Acquire(ctx, k, asker, time.Minute, "phone")
	if err != nil || got.Fence != h.Fence {
		t.Fatalf("the asker's Acquire = %+v, %v; want the handed-over grant, fence %d", got, err, h.Fence)
	}
	if _, err := holderS.Renew(ctx, k, holder, time.Minute); !errors.Is(err, data.ErrNotHeld) {
		t.Fatalf("the old holder's Renew err = %v, want ErrNotHeld", err)
	}
	if again, err := askerS.AskHandover(ctx, k, asker, time.Hour, "phone"); err != nil || again.Outcome != data.AskHandedOver {
		t.Fatalf("asking after the hand-over = %+v, %v; want handed_over", again, err)
	}

	var asked, over *data.Event
	for _, e := range keyEvents(t, askerS, k) {
		switch e.Kind {
		case data.KindHandoverAsked:
			asked = &e
		case data.KindHandedOver:
			over = &e
		case data.KindTakenOver:
			t.Fatalf("the hand-over was recorded as a takeover: %+v", e)
		}
	}
	if asked == nil || asked.RunID != data.PublicRunID(asker) || asked.PrevRunID != data.PublicRunID(holder) {
		t.Fatalf("handover_asked event = %+v, want asker and holder", asked)
	}
	if over == nil || over.RunID != data.PublicRunID(asker) || over.PrevRunID != data.PublicRunID(holder) ||
		over.Fence != h.Fence || over.PrevFence != g.Fence || over.Holder != "phone" {
		t.Fatalf("handed_over event = %+v, want asker %s ← holder %s, fence %d ← %d", over,
			data.PublicRunID(asker), data.PublicRunID(holder), h.Fence, g.Fence)
	}
}

// TestHandOverDeclined: the holder declines; the asker is told (its ask
// again answers declined, writing nothing), the lease stays, and a late
// hand-over finds no ask.
func TestHandOverDeclined(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	k := data.Key{Account: "acme", Session: "decline"}
	holder, asker := uuid.New(), uuid.New()
	g := mustAcquire(t, s, k, holder, time.Hour)
	if a, err := s.AskHandover(ctx, k, asker, time.Hour, "phone"); err != nil || a.Outcome != data.AskAsked {
		t.Fatalf("AskHandover = %+v, %v", a, err)
	}
	if d, err := s.DeclineHandover(ctx, k, asker); err != nil || d.Outcome != data.AskNotHeld {
		t.Fatalf("the asker declining its own ask = %+v, %v; want not_held", d, err)
	}
	d, err := s.DeclineHandover(ctx, k, holder)
	if err != nil || d.Outcome != data.AskDeclined || d.Ask.RunID != data.PublicRunID(asker) {
		t.Fatalf("DeclineHandover = %+v, %v; want declined", d, err)
	}
	n := len(keyEvents(t, s, k))
	if a, err := s.AskHandover(ctx, k, asker, time.Hour, "phone"); err != nil || a.Outcome != data.AskDeclined {
		t.Fatalf("the asker asking again = %+v, %v; want declined", a, err)
	}
	if h, err := s.HandOver(ctx, k, holder, time.Minute); err != nil || h.Outcome != data.AskNoAsk {
		t.Fatalf("HandOver after declining = %+v, %v; want no_ask", h, err)
	}
	evs := keyEvents(t, s, k)
	if len(evs) != n {
		t.Fatalf("asking again after a decline wrote %d events", len(evs)-n)
	}
	if last := evs[len(evs)-1]; last.Kind != data.KindHandoverDeclined || last.RunID != data.PublicRunID(asker) || last.PrevRunID != data.PublicRunID(holder) {
		t.Fatalf("last event = %+v, want handover_declined naming both runs", last)
	}
	if _, err := s.Renew(ctx, k, holder, time.Hour); err != nil {
		t.Fatalf("the holder's Renew after declining: %v", err)
	}
	if run, fence, _ := leaseOf(t, db.Conn(t), k); run != data.PublicRunID(holder) || fence != g.Fence {
		t.Fatalf("lease = %s fence %d, want the holder's, fence %d", run, fence, g.Fence)
	}
}

// TestHandOverAskExpires: an ask whose deadline passed ends as
// handover_expired the first time it is observed (the asker asking again),
// once; a late hand-over is refused and the lease stays; a new asker may
// then ask.
func TestHandOverAskExpires(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	k := data.Key{Account: "acme", Session: "expire"}
	holder, asker, next := uuid.New(), uuid.New(), uuid.New()
	mustAcquire(t, s, k, holder, time.Hour)
	a, err := s.AskHandover(ctx, k, asker, 20*time.Millisecond, "phone")
	if err != nil || a.Outcome != data.AskAsked {
		t.Fatalf("AskHandover = %+v, %v", a, err)
	}
	pgtest.WaitServerPast(t, db.Conn(t), a.Ask.Until)
	if p, err := s.PendingAsk(ctx, k); err != nil || p != nil {
		t.Fatalf("PendingAsk past the deadline = %+v, %v; want none", p, err)
	}
	for i := range 2 {
		if again, err := s.AskHandover(ctx, k, asker, time.Hour, "phone"); err != nil || again.Outcome != data.AskExpired {
			t.Fatalf("asking again (%d) = %+v, %v; want expired", i, again, err)
		}
	}
	if h, err := s.HandOver(ctx, k, holder, time.Minute); err != nil || h.Outcome != data.AskNoAsk {
		t.Fatalf("a late HandOver = %+v, %v; want no_ask", h, err)
	}
	expired := 0
	for _, e := range keyEvents(t, s, k) {
		if e.Kind == data.KindHandoverExpired {
			expired++
			if e.RunID != data.PublicRunID(asker) || e.PrevRunID != data.PublicRunID(holder) || e.Reason == "" {
				t.Fatalf("handover_expired = %+v, want both runs and a reason", e)
			}
		}
	}
	if expired != 1 {
		t.Fatalf("%d handover_expired events, want 1", expired)
	}
	if n, err := s.AskHandover(ctx, k, next, time.Hour, "tablet"); err != nil || n.Outcome != data.AskAsked {
		t.Fatalf("a new asker after the expiry = %+v, %v; want asked", n, err)
	}
}

// TestHandOverLateAnswerExpiresTheAsk: a hand-over that comes after the
// deadline, before anyone observed it, is refused and writes the expiry.
func TestHandOverLateAnswerExpiresTheAsk(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	k := data.Key{Account: "acme", Session: "late"}
	holder, asker := uuid.New(), uuid.New()
	mustAcquire(t, s, k, holder, time.Hour)
	a, err := s.AskHandover(ctx, k, asker, 20*time.Millisecond, "phone")
	if err != nil {
		t.Fatal(err)
	}
	pgtest.WaitServerPast(t, db.Conn(t), a.Ask.Until)
	if h, err := s.HandOver(ctx, k, holder, time.Minute); err != nil || h.Outcome != data.AskExpired {
		t.Fatalf("HandOver past the deadline = %+v, %v; want expired", h, err)
	}
	if run, _, _ := leaseOf(t, db.Conn(t), k); run != data.PublicRunID(holder) {
		t.Fatalf("lease moved to %s after a refused hand-over", run)
	}
	if again, err := s.AskHandover(ctx, k, asker, time.Hour, "phone"); err != nil || again.Outcome != data.AskExpired {
		t.Fatalf("the asker = %+v, %v; want expired", again, err)
	}
}

// TestHandOverReaderCannotAsk: lease_reader may read the pending ask but
// not ask, hand over or decline.
func TestHandOverReaderCannotAsk(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	k := data.Key{Account: "acme", Session: "reader"}
	holder := uuid.New()
	mustAcquire(t, db.Store(t), k, holder, time.Hour)
	if _, err := db.Store(t).AskHandover(ctx, k, uuid.New(), time.Hour, "app"); err != nil {
		t.Fatal(err)
	}
	dsn, _ := pgtest.Login(t, db, "lease_reader")
	r := pgtest.OpenStore(t, dsn, data.Options{})
	if p, err := r.PendingAsk(ctx, k); err != nil || p == nil {
		t.Fatalf("the reader's PendingAsk = %+v, %v; want the ask", p, err)
	}
	if _, err := r.AskHandover(ctx, k, uuid.New(), time.Hour, "reader"); !errors.Is(err, data.ErrPermission) {
		t.Fatalf("the reader's AskHandover err = %v, want ErrPermission", err)
	}
	if _, err := r.HandOver(ctx, k, holder, time.Minute); !errors.Is(err, data.ErrPermission) {
		t.Fatalf("the reader's HandOver err = %v, want ErrPermission", err)
	}
	if _, err := r.DeclineHandover(ctx, k, holder); !errors.Is(err, data.ErrPermission) {
		t.Fatalf("the reader's DeclineHandover err = %v, want ErrPermission", err)
	}
}

// TestHandOverCannotBeForged: a caller that sets lease.op itself and takes
// over an expired lease is still recorded as taken_over.
func TestHandOverCannotBeForged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	k := data.Key{Account: "acme", Session: "forge"}
	s := db.Store(t)
	mustAcquire(t, s, k, uuid.New(), 10*time.Millisecond)
	pgtest.WaitExpired(t, conn, k)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT set_config('lease.op', 'handover', true)`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT * FROM lease.acquire('acme', 'forge', $1, '1 minute', 'thief')`, uuid.New()); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	evs := keyEvents(t, s, k)
	if last := evs[len(evs)-1]; last.Kind != data.KindTakenOver {
		t.Fatalf("last event = %s, want taken_over", last.Kind)
	}
}

// TestHandOverNobodySlipsIn: while the holder hands over, a third run races
// acquires on its own connection: it never gets the lease, and the only
// ownership change is the hand-over.
func TestHandOverNobodySlipsIn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	holderS, askerS, thirdS := db.Store(t), db.Store(t), db.Store(t)
	k := data.Key{Account: "acme", Session: "race"}
	holder, asker := uuid.New(), uuid.New()
	g := mustAcquire(t, holderS, k, holder, time.Hour)
	if a, err := askerS.AskHandover(ctx, k, asker, time.Hour, "phone"); err != nil || a.Outcome != data.AskAsked {
		t.Fatalf("AskHandover = %+v, %v", a, err)
	}
	var (
		stop     atomic.Bool
		attempts atomic.Int64
		wg       sync.WaitGroup
		granted  atomic.Bool
	)
	wg.Go(func() {
		for !stop.Load() {
			if _, err := thirdS.Acquire(ctx, k, uuid.New(), time.Minute, "third"); err == nil {
				granted.Store(true)
			}
			attempts.Add(1)
		}
	})
	pgtest.Eventually(t, 10*time.Second, "the third run racing", func() bool { return attempts.Load() > 3 })
	h, err := holderS.HandOver(ctx, k, holder, time.Minute)
	if err != nil || h.Outcome != data.AskHandedOver {
		t.Fatalf("HandOver = %+v, %v", h, err)
	}
	n := attempts.Load()
	pgtest.Eventually(t, 10*time.Second, "the third run racing after the hand-over", func() bool { return attempts.Load() > n+3 })
	stop.Store(true)
	wg.Wait()
	if granted.Load() {
		t.Fatal("a third run acquired the lease during the hand-over")
	}
	var owners []data.Event
	for _, e := range keyEvents(t, holderS, k) {
		if e.Kind == data.KindAcquired || e.Kind == data.KindTakenOver || e.Kind == data.KindHandedOver || e.Kind.Ends() {
			owners = append(owners, e)
		}
	}
	if len(owners) != 2 || owners[0].Fence != g.Fence || owners[1].Kind != data.KindHandedOver || owners[1].Fence <= g.Fence {
		t.Fatalf("ownership events = %+v, want acquired then handed_over with a higher fence", owners)
	}
}

// TestFencesRiseAcrossAnAskEndedInARace is TestFencesRiseAcrossARacingAcquireAndRelease
// with an ask to hand over ended in between: acquire A draws its fence and
// waits on transaction C, which acquires (c1), is asked by x, releases,
// acquires again with a fence above A's (c2), releases, and lets y's ask
// end x's (handover_expired, carrying c1's lower fence) before it commits.
// The ask events are not ownership events: lease.acquire must still see
// c2's higher fence and refuse A's lower one (40001), not be hidden from it
// by the ask's event.
func TestFencesRiseAcrossAnAskEndedInARace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	k := data.Key{Account: "acme", Session: "race"}
	c, a, owner := db.Conn(t), db.Conn(t), db.Conn(t)
	var aPID int
	if err := a.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&aPID); err != nil {
		t.Fatal(err)
	}
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // committed below
	c1, c2, x, y := uuid.New(), uuid.New(), uuid.New(), uuid.New()
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := tx.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec(`SELECT * FROM lease.acquire($1, $2, $3, '1 minute', 'c')`, k.Account, k.Session, c1)
	type result struct {
		fence int64
		err   error
	}
	done := make(chan result, 1)
	go func() {
		var f int64
		err := a.QueryRow(ctx, `SELECT fence FROM lease.acquire($1, $2, $3, '1 minute', 'a')`, k.Account, k.Session, uuid.New()).Scan(&f)
		done <- result{f, err}
	}()
	waitBlocked(t, owner, aPID, false)
	exec(`SELECT * FROM lease.ask_handover($1, $2, $3, '1 hour', 'x')`, k.Account, k.Session, x)
	exec(`SELECT lease.release($1, $2, $3)`, k.Account, k.Session, c1)
	var f2 int64
	if err := tx.QueryRow(ctx, `SELECT fence FROM lease.acquire($1, $2, $3, '1 minute', 'c')`, k.Account, k.Session, c2).Scan(&f2); err != nil {
		t.Fatal(err)
	}
	exec(`SELECT lease.release($1, $2, $3)`, k.Account, k.Session, c2)
	var outcome string
	if err := tx.QueryRow(ctx, `SELECT outcome FROM lease.ask_handover($1, $2, $3, '1 hour', 'y')`, k.Account, k.Session, y).Scan(&outcome); err != nil || outcome != "free" {
		t.Fatalf("y's ask = %q, %v; want free (ending x's ask)", outcome, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	var pgErr *pgconn.PgError
	switch {
	case r.err == nil:
		t.Fatalf("A was granted fence %d after a released lease with fence %d: fences must rise per key", r.fence, f2)
	case !errors.As(r.err, &pgErr) || pgErr.Code != "40001":
		t.Fatalf("A's acquire err = %v, want 40001", r.err)
	}
}

// TestHandOverThroughPooler: the ask calls carry a run's secret id and
// return a composite; they work the same directly and through PgBouncer in
// transaction mode. A label with a terminal escape is refused, writing
// nothing.
func TestHandOverThroughPooler(t *testing.T) {
	t.Parallel()
	eachConnection(t, func(t *testing.T, db pgtest.DB, s *data.Store) {
		ctx := context.Background()
		k := data.Key{Account: "acme", Session: "pooled"}
		holder, asker := uuid.New(), uuid.New()
		g := mustAcquire(t, s, k, holder, time.Hour)
		if _, err := s.AskHandover(ctx, k, asker, time.Hour, "phone\x1b[2J"); !errors.Is(err, data.ErrInvalid) {
			t.Fatalf("an ask labelled with an escape err = %v, want ErrInvalid", err)
		}
		var pgErr *pgconn.PgError
		if _, err := db.Conn(t).Exec(ctx, `SELECT lease.ask_handover($1, $2, $3, '1 hour', $4)`,
			k.Account, k.Session, asker, "phone\u202e"); !errors.As(err, &pgErr) || pgErr.Code != "22023" {
			t.Fatalf("lease.ask_handover with a bidi override in the label err = %v, want SQLSTATE 22023", err)
		}
		if p, err := s.PendingAsk(ctx, k); err != nil || p != nil {
			t.Fatalf("PendingAsk after a refused ask = %+v, %v; want none", p, err)
		}
		if a, err := s.AskHandover(ctx, k, asker, time.Hour, "phone"); err != nil || a.Outcome != data.AskAsked {
			t.Fatalf("AskHandover = %+v, %v", a, err)
		}
		h, err := s.HandOver(ctx, k, holder, time.Minute)
		if err != nil || h.Outcome != data.AskHandedOver || h.Fence <= g.Fence {
			t.Fatalf("HandOver = %+v, %v", h, err)
		}
		if got, err := s.Acquire(ctx, k, asker, time.Minute, "phone"); err != nil || got.Fence != h.Fence {
			t.Fatalf("the asker's Acquire = %+v, %v; want fence %d", got, err, h.Fence)
		}
	})
}

// TestRenewWatchReadsTheAsk: a renewal with RenewWatch renews and returns
// the ask pending for the run in the same call; none when there is none or
// it is another run's lease; ErrNotHeld as Renew says it.
func TestRenewWatchReadsTheAsk(t *testing.T) {
	t.Parallel()
	eachConnection(t, func(t *testing.T, db pgtest.DB, s *data.Store) {
		ctx := context.Background()
		k := data.Key{Account: "acme", Session: "watch"}
		holder, asker := uuid.New(), uuid.New()
		g := mustAcquire(t, s, k, holder, time.Minute)
		exp, a, err := s.RenewWatch(ctx, k, holder, time.Hour)
		if err != nil || a != nil || !exp.After(g.ExpiresAt) {
			t.Fatalf("RenewWatch with no ask = %v, %+v, %v; want renewed, no ask", exp, a, err)
		}
		if _, err := s.AskHandover(ctx, k, asker, time.Hour, "phone"); err != nil {
			t.Fatal(err)
		}
		_, a, err = s.RenewWatch(ctx, k, holder, time.Hour)
		if err != nil || a == nil || a.RunID != data.PublicRunID(asker) || a.Holder != "phone" {
			t.Fatalf("RenewWatch with an ask = %+v, %v; want the ask of run %s", a, err, data.PublicRunID(asker))
		}
		if _, _, err := s.RenewWatch(ctx, k, uuid.New(), time.Hour); !errors.Is(err, data.ErrNotHeld) {
			t.Fatalf("RenewWatch by a stranger err = %v, want ErrNotHeld", err)
		}
	})
}
