package monitor

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// connectNobody logs in as a new role with no lease grant: it has only what
// PUBLIC has (CONNECT), which is enough to NOTIFY on any channel.
func connectNobody(t *testing.T, db pgtest.DB) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	dsn, name := pgtest.Login(t, db, "")
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect as %s: %v", name, err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	return conn
}

// feedProbe consumes a Feed and counts its resyncs and the event ids it
// delivered.
type feedProbe struct {
	mu     sync.Mutex
	syncs  int
	events map[int64]bool
	change chan struct{}
}

func startProbe(t *testing.T, s *data.Store, cfg FeedConfig) (*Feed, *feedProbe) {
	t.Helper()
	f := NewFeed(s, cfg)
	p := &feedProbe{events: map[int64]bool{}, change: make(chan struct{}, 1)}
	stop := f.Start(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			b, ok := f.Next()
			if !ok {
				return
			}
			p.mu.Lock()
			for _, it := range b.Items {
				switch {
				case it.Sync != nil:
					p.syncs++
					for _, e := range it.Sync.Events {
						p.events[e.ID] = true
					}
				case it.Event != nil:
					p.events[it.Event.ID] = true
				}
			}
			p.mu.Unlock()
			signal(p.change)
		}
	})
	t.Cleanup(func() { stop(); wg.Wait() })
	return f, p
}

// waitProbe waits up to 30 s for cond, polling on every batch.
func (p *feedProbe) wait(t *testing.T, what string, cond func(p *feedProbe) bool) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		p.mu.Lock()
		ok := cond(p)
		p.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-p.change:
		case <-deadline:
			t.Fatalf("waiting for %s", what)
		}
	}
}

func (p *feedProbe) resyncs() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.syncs
}

// TestForgedTruncationsCauseNoResync: a role with no lease grant sends 200
// "truncated" notifications naming a real event that is no truncation and
// an id with no row. Before, each made every monitor re-read every lease
// (197 extra scans for 200). The feed reads them back first: none
// may cause a resync. A real TRUNCATE still does.
func TestForgedTruncationsCauseNoResync(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s, owner := db.Store(t), db.Conn(t)
	mustAcquire(t, s, data.Key{Account: "acme", Session: "real"}, uuid.New(), time.Minute)
	var realID int64
	if err := owner.QueryRow(ctx, `SELECT max(id) FROM lease.event`).Scan(&realID); err != nil {
		t.Fatal(err)
	}
	_, p := startProbe(t, s, FeedConfig{MinResyncInterval: time.Millisecond}) // no rate limit: this is about reading back
	p.wait(t, "the first resync", func(p *feedProbe) bool { return p.syncs == 1 })

	attacker := connectNobody(t, db)
	for i := range 200 {
		id := realID
		if i%2 == 1 {
			id = 1_000_000 + int64(i)
		}
		if _, err := attacker.Exec(ctx, `SELECT pg_notify('lease_events', $1)`, fmt.Sprintf(`{"id":%d,"kind":"truncated"}`, id)); err != nil {
			t.Fatal(err)
		}
	}
	// A real event after them: notifications arrive in commit order.
	mustAcquire(t, s, data.Key{Account: "acme", Session: "sentinel"}, uuid.New(), time.Minute)
	var sentinel int64
	if err := owner.QueryRow(ctx, `SELECT max(id) FROM lease.event`).Scan(&sentinel); err != nil {
		t.Fatal(err)
	}
	p.wait(t, "the event after the forged ones", func(p *feedProbe) bool { return p.events[sentinel] })
	if n := p.resyncs(); n != 1 {
		t.Errorf("%d resyncs after 200 forged truncations, want 1 (the first)", n)
	}

	if _, err := owner.Exec(ctx, `TRUNCATE lease.session_lease`); err != nil {
		t.Fatal(err)
	}
	p.wait(t, "a resync after a real TRUNCATE", func(p *feedProbe) bool { return p.syncs == 2 })
}

// TestResyncsAreRateLimited: resyncs asked for within MinResyncInterval of
// the last one wait for it and coalesce; the notifications keep flowing
// meanwhile, and the owed resync happens once the interval has passed.
func TestResyncsAreRateLimited(t *testing.T) {
	db := pgtest.New(t)
	s := db.Store(t)
	f, p := startProbe(t, s, FeedConfig{MinResyncInterval: time.Hour})
	p.wait(t, "the first resync", func(p *feedProbe) bool { return p.syncs == 1 })
	for range 20 {
		f.Resync()
	}
	mustAcquire(t, s, data.Key{Account: "acme", Session: "after"}, uuid.New(), time.Minute)
	var id int64
	if err := db.Conn(t).QueryRow(context.Background(), `SELECT max(id) FROM lease.event`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	p.wait(t, "the event after the requests", func(p *feedProbe) bool { return p.events[id] })
	if n := p.resyncs(); n != 1 {
		t.Errorf("%d resyncs within the interval, want 1", n)
	}

	short, q := startProbe(t, s, FeedConfig{MinResyncInterval: 200 * time.Millisecond})
	q.wait(t, "the first resync", func(p *feedProbe) bool { return p.syncs == 1 })
	for range 20 {
		short.Resync()
	}
	q.wait(t, "the owed resync", func(p *feedProbe) bool { return p.syncs == 2 })
}
