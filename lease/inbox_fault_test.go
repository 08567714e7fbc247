package lease_test

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/pgserver"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/lease"
)

// childInbox holds testKey's lease and reads its Messages: it prints
// "run PUBLIC_ID" and "ready 0 FENCE", then "got ID" for each message it is
// handed, and acknowledges each only when the next one arrives (so that
// when it is killed its last message is delivered and not acknowledged).
const childInbox = "inbox"

func inboxChild(ctx context.Context, store *data.Store, ttl time.Duration) error {
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
	ms := l.Messages()
	fmt.Printf("ready 0 %d\n", l.Fence())
	fmt.Printf("run %s\n", l.RunID())
	var pending *lease.Message
	for m := range ms {
		fmt.Printf("got %d\n", m.ID)
		if pending != nil {
			if err := pending.Ack(ctx); err != nil {
				return err
			}
		}
		pending = &m
	}
	return fmt.Errorf("messages closed: %w", l.Err())
}

// childRun returns the child's public run id and the ids it printed.
func childRun(t *testing.T, c *child) (uuid.UUID, []int64) {
	t.Helper()
	var (
		run uuid.UUID
		ids []int64
	)
	for line := range strings.SplitSeq(c.out.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, "run "); ok {
			run = uuid.MustParse(rest)
		}
		var id int64
		if _, err := fmt.Sscanf(line, "got %d", &id); err == nil {
			ids = append(ids, id)
		}
	}
	return run, ids
}

// TestMessagesAcrossAKilledHolder: the holder, a real process, is killed
// with SIGKILL in the middle of a burst of steers. The next holder takes
// the lease over when it expires and gets every message the killed one did
// not acknowledge (the one it received last, carried to it); every message
// is acknowledged exactly once, and neither run was handed one twice.
func TestMessagesAcrossAKilledHolder(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	s := db.Store(t)
	c := startChild(t, db.URL, childInbox, 2*time.Second)
	log := newInboxLog()
	nextC := newClient(t, db.Store(t), lease.Config{TTL: 2 * time.Second})
	var next *lease.Lease
	n := 30
	ids := sendBurst(t, s, testKey, n, func() {
		pgtest.Eventually(t, 30*time.Second, "the child to be handed messages", func() bool {
			return strings.Contains(c.out.String(), "got ")
		})
		c.Signal(t, syscall.SIGKILL)
		c.Wait(t, 30*time.Second)
		var err error
		if next, err = nextC.Wait(context.Background(), permit(t, nextC, testKey, "desktop")); err != nil {
			t.Fatalf("the next holder's Wait: %v", err)
		}
		t.Cleanup(func() { _ = next.Release(context.Background()) })
	})
	done := readInbox(t, next, log, false)
	allAcked(t, db, testKey, n)
	_ = next.Release(context.Background())
	done()
	runs := log.runs()
	childID, childIDs := childRun(t, c)
	runs[childID] = childIDs
	if len(childIDs) == 0 {
		t.Fatalf("the child was handed nothing: %s", c.out.String())
	}
	if carried := inboxHolds(t, s, testKey, ids, runs); carried == 0 {
		t.Errorf("nothing carried from the killed run %s to %s", childID, next.RunID())
	}
}

// TestMessagesAcrossABackendKill: the holder's server connections (its
// calls' and its listener's) are terminated in the middle of a burst; it
// reconnects, keeps its lease, and is handed every message once, the ones
// whose notification it lost too (its listener's resync reads them).
func TestMessagesAcrossABackendKill(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	s := db.Store(t)
	conn := db.Conn(t)
	log := newInboxLog()
	dsn, role := pgtest.Login(t, db, "lease_app") // the holder's backends are this login's
	hC := newClient(t, pgtest.OpenStore(t, dsn, data.Options{}), lease.Config{TTL: 10 * time.Second})
	l := acquire(t, hC, permit(t, hC, testKey, "desktop"))
	done := readInbox(t, l, log, true)
	n := 30
	ids := sendBurst(t, s, testKey, n, func() {
		var killed int
		err := conn.QueryRow(context.Background(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE usename = $1`, role).Scan(&killed)
		if err != nil || killed < 2 {
			t.Fatalf("terminated %d backends (%v), want the holder's calls and its listener", killed, err)
		}
	})
	allAcked(t, db, testKey, n-1) // the last one waits, unacknowledged, for another to arrive
	if err := l.Err(); err != nil {
		t.Fatalf("the holder lost its lease: %v", err)
	}
	_ = l.Release(context.Background())
	done()
	runs := log.runs()
	if got := runs[l.RunID()]; len(got) != n {
		t.Errorf("the holder was handed %d messages, want all %d", len(got), n)
	}
	inboxHolds(t, s, testKey, ids[:n-1], runs)
}

// TestMessagesThroughAPgBouncerRestart: the holder reaches the database
// through PgBouncer (transaction mode; its listener polls), which is
// stopped and started again in the middle of a burst: the holder keeps its
// lease and is handed every message once.
func TestMessagesThroughAPgBouncerRestart(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	s := db.Store(t)
	log := newInboxLog()
	b := pgtest.Bouncer(t, pgserver.BouncerOptions{PoolSize: 2})
	holder := pgtest.OpenStore(t, db.Via(t, b), data.Options{})
	hC := newClient(t, holder, lease.Config{TTL: 10 * time.Second})
	l := acquire(t, hC, permit(t, hC, testKey, "desktop"))
	done := readInbox(t, l, log, true)
	n := 30
	ids := sendBurst(t, s, testKey, n, func() {
		pgtest.Eventually(t, 30*time.Second, "the holder to be handed messages", func() bool { return len(log.runs()[l.RunID()]) > 0 })
		b.Stop()
		if err := b.Restart(context.Background()); err != nil {
			t.Fatalf("restart PgBouncer: %v", err)
		}
	})
	allAcked(t, db, testKey, n-1)
	if err := l.Err(); err != nil {
		t.Fatalf("the holder lost its lease: %v", err)
	}
	_ = l.Release(context.Background())
	done()
	runs := log.runs()
	if got := runs[l.RunID()]; len(got) != n {
		t.Errorf("the holder was handed %d messages, want all %d", len(got), n)
	}
	inboxHolds(t, s, testKey, ids[:n-1], runs)
}
