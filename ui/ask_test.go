package ui

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestDetailShowsThePendingAsk: a session whose holder was asked to hand
// over shows the asker and the ask's deadline in its detail view (as a
// lease_reader), the events pane names the ask, and a hand-over shows as
// such.
func TestDetailShowsThePendingAsk(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	k := data.Key{Account: "acme", Session: "asked"}
	holder := uuid.New()
	if _, err := conn.Exec(ctx, `SELECT lease.acquire($1, $2, $3, '1 hour', 'desktop')`, k.Account, k.Session, holder); err != nil {
		t.Fatal(err)
	}
	asker := uuid.New()
	if _, err := conn.Exec(ctx, `SELECT lease.ask_handover($1, $2, $3, '1 hour', 'phone')`, k.Account, k.Session, asker); err != nil {
		t.Fatal(err)
	}
	d := liveModel(t, readerStore(t, db), true, 140, 40)
	d.waitScreen("asks run")
	d.press("enter")
	d.waitScreen("asked by")
	d.waitScreen("run " + data.PublicRunID(asker).String() + " (phone)")
	d.waitScreen("ask until")
	d.press("esc")
	if _, err := conn.Exec(ctx, `SELECT lease.hand_over($1, $2, $3, '1 hour')`, k.Account, k.Session, holder); err != nil {
		t.Fatal(err)
	}
	d.waitScreen("handed over")
}
