package ui

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"
	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/monitor"
)

// demoLeases are three of the demo's sessions, its holder labels.
func demoLeases() []data.Lease {
	return []data.Lease{
		mkLease("acme", "chat-1", "phone pid 4103", run(1), 52, 900*time.Millisecond, 400*time.Millisecond, 4*time.Second),
		mkLease("acme", "chat-2", "desktop pid 4101", run(2), 47, 3*time.Second, 500*time.Millisecond, 4*time.Second),
		mkLease("globex", "chat-1", "browser pid 4105", run(3), 44, 2*time.Second, 300*time.Millisecond, 4*time.Second),
	}
}

// askedEvent is run 8 (label asker) asking the holder run of k to hand over
// within 3 s.
func askedEvent(id int64, k data.Key, holder byte, asker string) data.Event {
	return data.Event{ID: id, Kind: data.KindHandoverAsked, At: server, Key: k, RunID: run(8), PrevRunID: run(holder),
		Holder: asker, ExpiresAt: server.Add(3 * time.Second)}
}

// askCell is the ASK column's text in k's row, "" when the row has none.
func askCell(t *testing.T, m *Model, k data.Key) string {
	t.Helper()
	lines := strings.Split(screen(m), "\n")
	head := -1
	for i, l := range lines {
		if strings.Contains(l, "ACCOUNT") {
			head = i
			break
		}
	}
	if head < 0 || !strings.Contains(lines[head], "ASK") {
		return ""
	}
	at := len([]rune(lines[head][:strings.Index(lines[head], "ASK")]))
	for _, l := range lines[head+1:] {
		if strings.Contains(l, " "+k.Account+" ") && strings.Contains(l, " "+k.Session+" ") {
			r := []rune(l)
			if at >= len(r) {
				return ""
			}
			return strings.TrimSpace(string(r[at:]))
		}
	}
	t.Fatalf("no row of %s:\n%s", k, screen(m))
	return ""
}

// TestAskColumnShowsPendingAsks: a session with an ask to hand over pending
// has the asker's label in the ASK column (before, only QUEUE showed),
// from the read of the pending asks and from the events between two reads:
// it shows when asked, goes when answered or at its deadline, and an ask
// to a holder that has let go is not shown.
func TestAskColumnShowsPendingAsks(t *testing.T) {
	t.Parallel()
	m, clock := newModel(t, 120, 30)
	apply(m, syncBatch(demoLeases(), nil))
	chat1, chat2, globex := demoLeases()[0].Key, demoLeases()[1].Key, demoLeases()[2].Key
	if s := screen(m); strings.Contains(s, "ASK") {
		t.Fatalf("an ASK column with no ask pending:\n%s", s)
	}

	// The read: an ask on acme/chat-2's holder, and one on a run that no
	// longer holds globex/chat-1.
	m.Update(asksMsg{asks: map[monitor.Key]data.PendingAsk{
		mkey(chat2):  {RunID: run(8), Holder: "phone pid 4103", HolderRunID: run(2), Until: server.Add(5 * time.Second)},
		mkey(globex): {RunID: run(9), Holder: "stale", HolderRunID: run(7), Until: server.Add(5 * time.Second)},
	}})
	if got := askCell(t, m, chat2); got != "phone pid 4103" {
		t.Errorf("ASK of %s = %q, want phone pid 4103", chat2, got)
	}
	if got := askCell(t, m, globex); got != "" {
		t.Errorf("ASK of %s = %q, want none (its holder is not the run asked)", globex, got)
	}

	// An ask arrives as an event: shown before the next read.
	apply(m, eventBatch(askedEvent(10, chat1, 1, "desktop pid 4107")))
	if got := askCell(t, m, chat1); got != "desktop pid 4107" {
		t.Errorf("ASK of %s after its handover_asked event = %q, want desktop pid 4107", chat1, got)
	}
	// Declined: gone.
	apply(m, eventBatch(data.Event{ID: 11, Kind: data.KindHandoverDeclined, At: server, Key: chat1, RunID: run(8), PrevRunID: run(1)}))
	if got := askCell(t, m, chat1); got != "" {
		t.Errorf("ASK of %s after the decline = %q, want none", chat1, got)
	}
	// A read asked before an event and answered after it does not bring
	// back what the event ended.
	apply(m, eventBatch(askedEvent(12, chat1, 1, "desktop pid 4107")))
	stale := asksMsg{cursor: map[string]int64{"": 12}, asks: map[monitor.Key]data.PendingAsk{
		mkey(chat1): {RunID: run(8), Holder: "desktop pid 4107", HolderRunID: run(1), Until: server.Add(3 * time.Second)}}}
	apply(m, eventBatch(data.Event{ID: 13, Kind: data.KindHandedOver, At: server, Key: chat1, RunID: run(8), PrevRunID: run(1),
		Fence: 60, PrevFence: 52, Holder: "desktop pid 4107", ExpiresAt: server.Add(4 * time.Second)}))
	m.Update(stale)
	if got := askCell(t, m, chat1); got != "" {
		t.Errorf("ASK of %s after the hand-over and a read from before it = %q, want none", chat1, got)
	}
	// At its deadline the ask ends without an event.
	clock.Advance(6 * time.Second)
	apply(m, readBatch(clock.Now()))
	m.Update(tickMsg(clock.Now()))
	if s := screen(m); strings.Contains(s, "phone pid 4103 ") && askCell(t, m, chat2) != "" {
		t.Errorf("ASK of %s after its deadline = %q, want none", chat2, askCell(t, m, chat2))
	}
}

// TestGoldenAsks: the sessions table with a queue and pending asks, at the
// demo's 80x24 and at 160x45: at 80 columns the ages go before the holder
// labels are cut, and the run and fence stay. Regenerate with
// go test ./ui -run TestGoldenAsks -update, after reading the diff.
func TestGoldenAsks(t *testing.T) {
	t.Parallel()
	for _, size := range []struct {
		name string
		w, h int
	}{{"80x24", 80, 24}, {"160x45", 160, 45}, {"60x16", 60, 16}} {
		t.Run(size.name, func(t *testing.T) {
			t.Parallel()
			m, _ := newModel(t, size.w, size.h)
			leases := demoLeases()
			apply(m, syncBatch(leases, nil))
			m.Update(queuesMsg{lengths: map[monitor.Key]int{mkey(leases[1].Key): 2}})
			m.Update(asksMsg{asks: map[monitor.Key]data.PendingAsk{
				mkey(leases[1].Key): {RunID: run(8), Holder: "phone pid 4103", HolderRunID: run(2), Until: server.Add(2 * time.Second)}}})
			apply(m, eventBatch(askedEvent(20, leases[2].Key, 3, "desk\x1b[2Jtop pid 4107")))
			out := screen(m)
			checkFrame(t, out, size.w, size.h)
			golden.RequireEqual(t, out)
		})
	}
}

// TestAskColumnOnAStore: on a real database, as a lease_reader, a pending
// ask shows its asker in the ASK column (the feed's event, then the read of
// lease.handover_ask), and goes when the holder hands over; the events pane
// names the hand-over's holders old→new.
func TestAskColumnOnAStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	k := data.Key{Account: "acme", Session: "asked"}
	holder := uuid.New()
	if _, err := conn.Exec(ctx, `SELECT lease.acquire($1, $2, $3, '1 hour', 'desktop pid 7')`, k.Account, k.Session, holder); err != nil {
		t.Fatal(err)
	}
	d := liveModel(t, readerStore(t, db), true, 140, 40)
	d.waitScreen("desktop pid 7")
	if _, err := conn.Exec(ctx, `SELECT lease.ask_handover($1, $2, $3, '1 hour', 'phone pid 8')`, k.Account, k.Session, uuid.New()); err != nil {
		t.Fatal(err)
	}
	d.waitFor("the ASK column to name phone pid 8", func(m *Model) bool { return askCell(t, m, k) == "phone pid 8" })
	if _, err := conn.Exec(ctx, `SELECT lease.hand_over($1, $2, $3, '1 hour')`, k.Account, k.Session, holder); err != nil {
		t.Fatal(err)
	}
	d.waitScreen("desktop pid 7→phone pid 8")
	d.waitFor("no ASK column once handed over", func(m *Model) bool { return !strings.Contains(screen(m), " ASK") })
}
