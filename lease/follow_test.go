package lease_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/lease"
)

// nextOwner waits for the follow's next owner.
func nextOwner(t *testing.T, owners <-chan lease.Owner) lease.Owner {
	t.Helper()
	select {
	case o, ok := <-owners:
		if !ok {
			t.Fatal("Follow's channel closed")
		}
		return o
	case <-time.After(30 * time.Second):
		t.Fatal("no owner from Follow within 30 s")
	}
	return lease.Owner{}
}

// TestFollowGivesEachOwner: Follow gives the conversation's current owner,
// then each change as it happens: a release, a new run with its
// attachment, an attachment replaced (no event: the row's poll), a preempt
// by another run; and after its listener's connection is killed, the
// owners that came and went meanwhile, none skipped, in fence order.
func TestFollowGivesEachOwner(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db := pgtest.New(t)
	s := db.Store(t)
	readerDSN, reader := pgtest.Login(t, db, "lease_reader")
	fc := newClient(t, pgtest.OpenStore(t, readerDSN, data.Options{}), lease.Config{PollInterval: 100 * time.Millisecond})
	a := uuid.New()
	ga, err := s.Acquire(ctx, testKey, a, time.Minute, "desktop")
	if err != nil {
		t.Fatal(err)
	}
	owners, err := fc.Follow(ctx, testKey)
	if err != nil {
		t.Fatal(err)
	}
	if o := nextOwner(t, owners); o.Free || o.RunID != data.PublicRunID(a) || o.Fence != ga.Fence || o.Holder != "desktop" {
		t.Fatalf("first owner %+v, want desktop's run %s", o, data.PublicRunID(a))
	}
	if _, err := s.Release(ctx, testKey, a); err != nil {
		t.Fatal(err)
	}
	if o := nextOwner(t, owners); !o.Free || o.By.Kind != data.KindReleased || o.RunID != data.PublicRunID(a) {
		t.Fatalf("after the release %+v, want free, released by desktop's run", o)
	}
	bC := newClient(t, s, lease.Config{TTL: 30 * time.Second})
	pb, err := bC.AuthorizeRequest(ctx, allowAll, lease.Request{Key: testKey, Holder: "phone", Attachment: "stream-1"})
	if err != nil {
		t.Fatal(err)
	}
	b := acquire(t, bC, pb)
	// The event, or the row's poll if it comes first (with the event): once.
	if o := nextOwner(t, owners); o.RunID != b.RunID() || o.Attachment != "stream-1" || o.By.Kind != data.KindAcquired {
		t.Fatalf("after phone's acquire %+v, want its run with its attachment", o)
	}
	if err := b.SetAttachment(ctx, "stream-2"); err != nil {
		t.Fatal(err)
	}
	if o := nextOwner(t, owners); o.RunID != b.RunID() || o.Attachment != "stream-2" {
		t.Fatalf("after SetAttachment %+v, want phone's run with stream-2", o)
	}
	cC := newClient(t, s, lease.Config{TTL: 30 * time.Second})
	c, err := cC.Preempt(ctx, permit(t, cC, testKey, "browser"), "a new message")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release(ctx)
	if o := nextOwner(t, owners); o.RunID != c.RunID() || o.By.Kind != data.KindPreempted || o.Fence <= b.Fence() {
		t.Fatalf("after the preempt %+v, want browser's run at a higher fence", o)
	}

	// A gap: the follower's connections are killed, and two runs come and
	// go before it reconnects and reads the backlog.
	conn := db.Conn(t)
	if _, err := conn.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1`, reader); err != nil {
		t.Fatal(err)
	}
	if err := c.Release(ctx); err != nil {
		t.Fatal(err)
	}
	var fences []int64
	for range 2 {
		r := uuid.New()
		g, err := s.Acquire(ctx, testKey, r, time.Minute, "watch")
		if err != nil {
			t.Fatal(err)
		}
		fences = append(fences, g.Fence)
		if _, err := s.Release(ctx, testKey, r); err != nil {
			t.Fatal(err)
		}
	}
	var grants []int64
	last := c.Fence()
	for len(grants) < 2 {
		o := nextOwner(t, owners)
		if o.Fence < last {
			t.Fatalf("owner %+v after fence %d: owners go back", o, last)
		}
		last = o.Fence
		if !o.Free {
			grants = append(grants, o.Fence)
		}
	}
	if grants[0] != fences[0] || grants[1] != fences[1] {
		t.Errorf("the runs that came and went in the gap: fences %v, want %v", grants, fences)
	}
}

// TestFollowRowFirstCarriesTheEvent: when the lease's row shows a change of
// owner before its notification arrives (here the listener reads events
// once a minute, the row every 20 ms), Follow still gives the event that
// made it, and does not give the owner twice when the event comes.
func TestFollowRowFirstCarriesTheEvent(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db := pgtest.New(t)
	s := db.Store(t)
	readerDSN, _ := pgtest.Login(t, db, "lease_reader")
	fc := newClient(t, pgtest.OpenStore(t, readerDSN, data.Options{}),
		lease.Config{PollInterval: 20 * time.Millisecond, Listener: data.ListenerConfig{Poll: time.Minute}})
	owners, err := fc.Follow(ctx, testKey)
	if err != nil {
		t.Fatal(err)
	}
	if o := nextOwner(t, owners); !o.Free || o.By.Kind != "" {
		t.Fatalf("first owner %+v, want free, read from the row", o)
	}
	a := uuid.New()
	g, err := s.Acquire(ctx, testKey, a, time.Minute, "desktop")
	if err != nil {
		t.Fatal(err)
	}
	if o := nextOwner(t, owners); o.Free || o.Fence != g.Fence || o.By.Kind != data.KindAcquired || o.By.Fence != g.Fence {
		t.Fatalf("after the acquire %+v, want desktop's run with its acquired event", o)
	}
	if _, err := s.Release(ctx, testKey, a); err != nil {
		t.Fatal(err)
	}
	if o := nextOwner(t, owners); !o.Free || o.By.Kind != data.KindReleased || o.RunID != data.PublicRunID(a) || o.Holder != "desktop" {
		t.Fatalf("after the release %+v, want free, released by desktop's run", o)
	}
}
