package ui

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/monitor"
)

// TestAccountsViewAndSlotColumn: a read-only monitor as a lease_reader
// reads the limits; the table's SLOT column names the slot each lease of
// a limited account holds (none for an unlimited account's); a opens the
// accounts view, fullest first with slots used, saturation, the queued
// tickets and the sessions holding the slots; / filters it, esc clears
// the filter; s sorts it by account; esc goes back. The detail view of a session holding a slot names it.
func TestAccountsViewAndSlotColumn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	for _, q := range []string{`SELECT lease.set_limit('globex', '', 4)`, `SELECT lease.set_limit('acme', '', 2)`} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	sqlAcquire(t, conn, data.Key{Account: "acme", Session: "chat-1"}, "1 hour", "desktop")
	sqlAcquire(t, conn, data.Key{Account: "acme", Session: "chat-2"}, "1 hour", "phone")
	sqlAcquire(t, conn, data.Key{Account: "globex", Session: "g-1"}, "1 hour", "browser")
	sqlAcquire(t, conn, data.Key{Account: "free", Session: "f-1"}, "1 hour", "laptop")
	if _, err := conn.Exec(ctx, `SELECT lease.enqueue('acme', 'chat-1', gen_random_uuid(), '1 hour', 'tablet')`); err != nil {
		t.Fatal(err)
	}
	d := liveModel(t, readerStore(t, db), true, 160, 30)
	d.waitFor("four leases and the limits' slots", func(m *Model) bool { return len(m.rows) == 4 && len(m.limits.slots) == 3 })
	d.waitScreen("SLOT")
	for k, want := range map[data.Key]string{
		{Account: "acme", Session: "chat-1"}: "1", {Account: "acme", Session: "chat-2"}: "2",
		{Account: "globex", Session: "g-1"}: "1", {Account: "free", Session: "f-1"}: "",
	} {
		if got := d.m.limits.slotOf(monitor.Key{Key: k}); got != want {
			t.Errorf("SLOT of %v = %q, want %q", k, got, want)
		}
	}

	d.selectSession(data.Key{Account: "acme", Session: "chat-2"})
	d.press("enter")
	d.waitScreen("slot 2 of the account's 2 (2/2 used)")
	d.press("esc")
	d.waitFor("the main screen", func(m *Model) bool { return m.mode == modeMain })

	d.press("a")
	d.waitScreen("ACCOUNTS limits, fullest first")
	s := screen(d.m)
	acme, globex := strings.Index(s, "acme "), strings.Index(s, "globex ")
	if acme < 0 || globex < 0 || acme > globex {
		t.Fatalf("accounts view: want acme (full) above globex:\n%s", s)
	}
	for _, want := range []string{"2/2", "100%", "1/4", "25%", "chat-1 (desktop,", "chat-2 (phone,", "g-1 (browser,"} {
		if !strings.Contains(s, want) {
			t.Errorf("accounts view lacks %q:\n%s", want, s)
		}
	}
	if !regexp.MustCompile(`acme +- +2/2 +█+ 100% +1 +chat-1 \(desktop,`).MatchString(s) {
		t.Errorf("accounts view: want acme's line with 1 queued ticket:\n%s", s)
	}
	if strings.Contains(s, "free ") {
		t.Errorf("accounts view lists free, which has no limit:\n%s", s)
	}
	d.press("/")
	d.press(strings.Split("glob", "")...)
	d.press("enter")
	d.waitFor("the filter to keep globex alone", func(m *Model) bool {
		rows := m.accountRows()
		return len(rows) == 1 && rows[0].Account == "globex"
	})
	d.press("esc")
	d.waitFor("the filter cleared", func(m *Model) bool { return m.mode == modeAccounts && len(m.accountRows()) == 2 })
	d.press("s")
	d.waitScreen("ACCOUNTS limits, by account")
	d.press("esc")
	d.waitFor("the main screen", func(m *Model) bool { return m.mode == modeMain })
}
