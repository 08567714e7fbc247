package ui

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/data"
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
