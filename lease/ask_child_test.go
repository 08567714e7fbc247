package lease_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/lease"
)

// childAsked holds testKey's lease and watches its asks: it prints "ready 0
// FENCE", then "asked RUNID" for the first ask, and on the line "hand" on
// stdin hands over and prints "handed ERR".
const childAsked = "asked"

func askedChild(ctx context.Context, store *data.Store, ttl time.Duration) error {
	client, err := lease.New(store, lease.Config{TTL: ttl})
	if err != nil {
		return err
	}
	defer client.Close()
	p, err := client.Authorize(ctx, allowAll, testKey, "child")
	if err != nil {
		return err
	}
	l, err := client.Try(ctx, p)
	if err != nil {
		return err
	}
	asks := l.Asked()
	fmt.Printf("ready 0 %d\n", l.Fence())
	a, ok := <-asks
	if !ok {
		return fmt.Errorf("lease ended: %w", l.Err())
	}
	fmt.Printf("asked %s\n", a.RunID)
	in := bufio.NewReader(os.Stdin)
	for {
		line, err := in.ReadString('\n')
		if err != nil {
			return nil
		}
		if strings.TrimSpace(line) == "hand" {
			fmt.Printf("handed %v\n", l.HandOver(ctx))
		}
	}
}

// ownershipHolds checks key's history: fences rise across ownership
// changes, every acquired finds the session free, every taken_over comes
// after the previous lease's expiry, and every handed_over moves the lease
// from the run that held it. So at no instant two runs held an unexpired
// lease.
func ownershipHolds(t *testing.T, s *data.Store, key lease.Key) []data.Event {
	t.Helper()
	evs, err := s.EventsFor(context.Background(), key, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var (
		owners []data.Event
		cur    *data.Event
		fence  int64
	)
	for i := len(evs) - 1; i >= 0; i-- { // EventsFor is newest first
		e := evs[i]
		switch e.Kind {
		case data.KindAcquired, data.KindTakenOver, data.KindHandedOver:
			if e.Fence <= fence {
				t.Errorf("event %d (%s) fence %d after fence %d: fences must rise", e.ID, e.Kind, e.Fence, fence)
			}
			fence = e.Fence
			switch {
			case e.Kind == data.KindAcquired && cur != nil:
				t.Errorf("event %d: acquired while run %s held the session", e.ID, cur.RunID)
			case e.Kind != data.KindAcquired && (cur == nil || cur.RunID != e.PrevRunID):
				t.Errorf("event %d (%s): from run %s, which did not hold the session", e.ID, e.Kind, e.PrevRunID)
			case e.Kind == data.KindTakenOver && e.PrevExpiresAt.After(e.At):
				t.Errorf("event %d: taken over before the previous lease expired: two owners", e.ID)
			}
			cur = &e
			owners = append(owners, e)
		case data.KindReleased, data.KindForceReleased:
			cur = nil
		}
	}
	return owners
}

// TestAskFrozenHolderExpires: the holder (a real process) is frozen with
// SIGSTOP when asked, so nobody answers: the ask expires on the database
// clock, is recorded as handover_expired, and the asker's fallback runs
// (refuse: ErrAskExpired, the frozen holder's lease untouched; preempt: the
// asker takes the lease from the frozen holder with a higher fence).
func TestAskFrozenHolderExpires(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	c := startChild(t, db.URL, childAsked, 30*time.Second)
	c.Signal(t, syscall.SIGSTOP)
	defer c.Signal(t, syscall.SIGCONT)
	askerC := newClient(t, db.Store(t), lease.Config{TTL: 3 * time.Second})
	p := permit(t, askerC, testKey, "phone")
	if _, err := askerC.Ask(ctx, p, 300*time.Millisecond, lease.BusyRefuse); !errors.Is(err, lease.ErrAskExpired) {
		t.Fatalf("Ask of a frozen holder err = %v, want ErrAskExpired", err)
	}
	row := holderOf(t, db.Store(t), testKey)
	if row.Fence != c.fence {
		t.Fatalf("lease fence %d after a refused ask, want the frozen holder's %d", row.Fence, c.fence)
	}
	l, err := askerC.Ask(ctx, p, 300*time.Millisecond, lease.BusyPreempt)
	if err != nil {
		t.Fatalf("Ask then preempt of a frozen holder: %v", err)
	}
	defer l.Release(ctx)
	if l.Fence() <= c.fence {
		t.Fatalf("the preempting asker's fence %d, want above the frozen holder's %d", l.Fence(), c.fence)
	}
	evs, err := db.Store(t).EventsFor(ctx, testKey, 100)
	if err != nil {
		t.Fatal(err)
	}
	var asked, expired, preempted int
	for _, e := range evs {
		switch e.Kind {
		case data.KindHandoverAsked:
			asked++
		case data.KindHandoverExpired:
			expired++
			if e.PrevRunID != row.RunID || e.Reason != "no answer by the deadline" {
				t.Errorf("handover_expired = %+v, want the frozen holder and reason", e)
			}
		case data.KindHandedOver:
			t.Fatalf("handed over by a frozen holder: %+v", e)
		case data.KindPreempted:
			preempted++
			if e.PrevRunID != row.RunID || e.RunID != l.RunID() {
				t.Errorf("preempted = %+v, want the asker replacing the frozen holder", e)
			}
		}
	}
	if asked != 2 || expired != 2 || preempted != 1 {
		t.Fatalf("%d asks, %d expiries and %d preempts, want 2, 2 and 1", asked, expired, preempted)
	}
}

// TestAskHolderKilledMidHandOver: the holder (a real process) is killed
// with SIGKILL while its hand-over waits inside its transaction (the test
// holds the ask's row). Whatever becomes of that transaction, the asker
// ends up holding the lease with a higher fence, and the history never
// shows two owners at once.
func TestAskHolderKilledMidHandOver(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	c := startChild(t, db.URL, childAsked, 3*time.Second)
	askerC := newClient(t, db.Store(t), lease.Config{TTL: 3 * time.Second})
	done := askAsync(ctx, askerC, permit(t, askerC, testKey, "phone"), time.Minute, lease.BusyRefuse)
	pgtest.Eventually(t, 30*time.Second, "the child to be asked", func() bool { return strings.Contains(c.out.String(), "asked ") })

	tx, err := db.Conn(t).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after the rollback below
	if _, err := tx.Exec(ctx, `SELECT FROM lease.handover_ask WHERE account_id = $1 AND session_id = $2 FOR UPDATE`,
		testKey.Account, testKey.Session); err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fprintln(c.stdin, "hand"); err != nil {
		t.Fatal(err)
	}
	watch := db.Conn(t)
	pgtest.Eventually(t, 30*time.Second, "the holder's hand-over to wait for the ask's row", func() bool {
		var n int
		_ = watch.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE query LIKE '%lease.hand_over(%' AND wait_event_type = 'Lock'`).Scan(&n)
		return n == 1
	})
	c.Signal(t, syscall.SIGKILL)
	c.Wait(t, 30*time.Second)
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	r := result(t, done)
	if r.err != nil {
		t.Fatalf("Ask after the holder was killed: %v", r.err)
	}
	if r.l.Fence() <= c.fence {
		t.Fatalf("asker's fence %d, want above the killed holder's %d", r.l.Fence(), c.fence)
	}
	owners := ownershipHolds(t, db.Store(t), testKey)
	if last := owners[len(owners)-1]; last.RunID != r.l.RunID() {
		t.Fatalf("last owner %s, want the asker %s", last.RunID, r.l.RunID())
	}
	t.Logf("the killed holder's lease went to the asker by %s", owners[len(owners)-1].Kind)
}
