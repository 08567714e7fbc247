package ui

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestEventsPaneShowsTheInbox: the events pane names a message's send,
// delivery, carry to the next run and acknowledgement, with its id, kind
// and sender, as a lease_reader sees them.
func TestEventsPaneShowsTheInbox(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	k := data.Key{Account: "acme", Session: "steered"}
	d := liveModel(t, readerStore(t, db), true, 160, 40)
	a := uuid.New()
	if _, err := s.Acquire(ctx, k, a, time.Hour, "desktop"); err != nil {
		t.Fatal(err)
	}
	st, err := s.SendMessage(ctx, k, data.MessageSteer, "check March", "phone", "k1", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	d.waitScreen("msg sent")
	d.waitScreen("steer 1 from phone")
	if _, err := s.ReceiveMessages(ctx, k, a, 0, 64); err != nil {
		t.Fatal(err)
	}
	d.waitScreen("msg delivered")
	if _, err := s.Release(ctx, k, a); err != nil {
		t.Fatal(err)
	}
	b := uuid.New()
	if _, err := s.Acquire(ctx, k, b, time.Hour, "phone"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReceiveMessages(ctx, k, b, 0, 64); err != nil {
		t.Fatal(err)
	}
	d.waitScreen("msg carried")
	d.waitScreen("run " + shortRun(data.PublicRunID(a)) + "→" + shortRun(data.PublicRunID(b)))
	if _, err := s.AckMessage(ctx, k, b, st.ID); err != nil {
		t.Fatal(err)
	}
	d.waitScreen("msg acked")
}

// TestInboxColumn: the table's INBOX column appears while a held session
// has live messages, with how many and the oldest one's age, the detail
// view says how many no run received yet, and the column goes once they
// are acknowledged; all as a lease_reader reads them.
func TestInboxColumn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	k := data.Key{Account: "acme", Session: "steered"}
	run := uuid.New()
	if _, err := s.Acquire(ctx, k, run, time.Hour, "desktop"); err != nil {
		t.Fatal(err)
	}
	d := liveModel(t, readerStore(t, db), true, 160, 40)
	d.waitScreen("desktop")
	if strings.Contains(screen(d.m), "INBOX") {
		t.Fatalf("an INBOX column with no message sent:\n%s", screen(d.m))
	}
	for _, body := range []string{"check March", "and April"} {
		if _, err := s.SendMessage(ctx, k, data.MessageSteer, body, "phone", body, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	d.waitFor("the INBOX column with 2 messages", func(m *Model) bool {
		return strings.Contains(screen(m), "INBOX") && inboxCell(m, k) == "2"
	})
	d.selectSession(k)
	d.press("enter")
	d.waitScreen("2 live, 2 not received by a run yet")
	ms, err := s.ReceiveMessages(ctx, k, run, 0, data.MaxReceive)
	if err != nil || len(ms) != 2 {
		t.Fatalf("ReceiveMessages = %v, %v; want the 2 steers", ms, err)
	}
	d.waitScreen("2 live, 0 not received by a run yet")
	for _, m := range ms {
		if _, err := s.AckMessage(ctx, k, run, m.ID); err != nil {
			t.Fatal(err)
		}
	}
	d.press("esc")
	d.waitFor("the INBOX column to go", func(m *Model) bool { return !strings.Contains(screen(m), "INBOX") })
}

// inboxCell is the count of the INBOX cell of key's row, "" when the
// row does not show it.
func inboxCell(m *Model, key data.Key) string {
	in := m.inboxes.of(mkey(key))
	for _, line := range strings.Split(screen(m), "\n") {
		if strings.Contains(line, key.Session) && strings.Contains(line, "desktop") && in.Live > 0 && strings.Contains(line, inboxText(in)) {
			return fmt.Sprint(in.Live)
		}
	}
	return ""
}
