package ui

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestQueueColumnAndDetail: the QUEUE column appears once a session has a
// queue (and not before), with its length, and the detail view lists the
// tickets in order with their labels and how long they have waited; the
// events pane says what a queue_joined is.
func TestQueueColumnAndDetail(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	k := data.Key{Account: "acme", Session: "chat-queue"}
	if _, err := s.Acquire(ctx, k, uuid.New(), time.Minute, "desktop"); err != nil {
		t.Fatal(err)
	}
	d := liveModel(t, s, true, 120, 30)
	d.waitScreen("chat-queue")
	if strings.Contains(screen(d.m), "QUEUE") {
		t.Fatalf("a QUEUE column with no queue anywhere:\n%s", screen(d.m))
	}
	for _, label := range []string{"phone", "tablet"} {
		if _, err := s.Enqueue(ctx, k, uuid.New(), time.Minute, label); err != nil {
			t.Fatal(err)
		}
	}
	d.waitFor("the QUEUE column with 2", func(m *Model) bool {
		out := screen(m)
		if !strings.Contains(out, "QUEUE") {
			return false
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, "chat-queue") && strings.HasSuffix(strings.TrimRight(line, " "), " 2") {
				return true
			}
		}
		return false
	})
	d.waitScreen("took a ticket") // the events pane names the queue's events
	d.selectSession(k)
	d.press("enter")
	d.waitScreen(" 2. tablet") // the queue is read when the view opens
	out := screen(d.m)
	phone, tablet := strings.Index(out, " 1. phone"), strings.Index(out, " 2. tablet")
	if phone < 0 || tablet < phone || !strings.Contains(out, "2 waiting") || !strings.Contains(out, "waiting ") {
		t.Fatalf("the detail view does not list the queue in order with wait times:\n%s", out)
	}
}

// TestClearQueueThroughKeys: C on a session with a
// queue opens a (y/N) dialog naming it and its tickets; n cancels and
// clears nothing; y with a reason clears every ticket, recorded as
// queue_left with the login and the reason, and the events pane says who
// cleared them. As a lease_reader (not read-only) the status line names the
// role it needs, and nothing is cleared; in read-only mode the key is
// disabled.
func TestClearQueueThroughKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	k := data.Key{Account: "acme", Session: "chat-squat"}
	if _, err := s.Acquire(ctx, k, uuid.New(), time.Hour, "desktop"); err != nil {
		t.Fatal(err)
	}
	for _, label := range []string{"phone", "tablet"} {
		if _, err := s.Enqueue(ctx, k, uuid.New(), time.Hour, label); err != nil {
			t.Fatal(err)
		}
	}
	queued := func() int {
		q, err := s.QueueOf(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		return len(q)
	}
	open := func(d *driver) {
		t.Helper()
		// The queue's length is read apart from the feed: wait for it and
		// for the session's row in the table.
		d.waitFor("the queue's length and the lease", func(m *Model) bool {
			_, held := m.state.LeaseOf(mkey(k))
			return m.queues.length(mkey(k)) == 2 && held && len(m.rows) > 0
		})
		d.selectSession(k)
		d.press("C")
	}

	reader := liveModel(t, readerStore(t, db), false, 120, 30)
	open(reader)
	reader.press("y")
	reader.waitFor("the refusal", func(m *Model) bool { return strings.Contains(m.status, "failed") })
	if !strings.Contains(reader.m.status, "clearing a queue needs role lease_admin") || queued() != 2 {
		t.Errorf("as a lease_reader: status %q, %d tickets left; want the missing role named and 2 tickets", reader.m.status, queued())
	}

	ro := liveModel(t, s, true, 120, 30)
	open(ro)
	if ro.m.dialog != nil || !strings.Contains(ro.m.status, "read-only mode: C") {
		t.Errorf("read-only: dialog %v, status %q; want no dialog and C refused", ro.m.dialog != nil, ro.m.status)
	}

	d := liveModel(t, s, false, 120, 30)
	open(d)
	out := screen(d.m)
	if d.m.dialog == nil || !strings.Contains(out, "Clear this session's queue?") || !strings.Contains(out, "2 tickets") || !strings.Contains(out, "chat-squat") {
		t.Fatalf("the dialog is not open on the queue of %v:\n%s", k, out)
	}
	d.press("n")
	if d.m.dialog != nil || d.m.status != "clearing the queue cancelled" || queued() != 2 {
		t.Fatalf("n: dialog %v, status %q, %d tickets; want it closed, cancelled, 2 tickets", d.m.dialog != nil, d.m.status, queued())
	}
	d.press("C", "tab")
	d.press(strings.Split("squatting INC-8", "")...)
	d.press("enter", "y")
	d.waitFor("the clear's outcome", func(m *Model) bool { return strings.HasPrefix(m.status, "cleared") })
	if d.m.status != "cleared 2 tickets from the queue of acme/chat-squat" || queued() != 0 {
		t.Fatalf("status %q, %d tickets left; want both cleared", d.m.status, queued())
	}
	d.waitScreen("cleared by postgres: squatting INC-8")
	rows, err := db.Conn(t).Query(ctx, `SELECT actor || ' ' || reason FROM lease.event WHERE kind = 'queue_left' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(got) != 2 || got[0] != "postgres cleared: squatting INC-8" || got[1] != got[0] {
		t.Errorf("queue_left events = %q, %v; want two by postgres with the reason", got, err)
	}
}
