package ui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// TestHugeTableDropsAReleasedRowAtTheTick: above hugeTable leases the rows
// are sorted again at most once a second, and they are references to the
// state's leases, not copies: a lease released in between leaves the table
// with the tick that applies its batch (the cursor staying on its session),
// never showing a row whose lease is gone; a resync sorts the rows again at
// once.
func TestHugeTableDropsAReleasedRowAtTheTick(t *testing.T) {
	t.Parallel()
	m, c := newModel(t, 120, 30)
	leases := make([]data.Lease, hugeTable+10)
	for i := range leases {
		leases[i] = mkLease("acct", fmt.Sprintf("s%06d", i), "dev", run(byte(i)), int64(i+1), time.Minute, 0, time.Minute)
	}
	apply(m, syncBatch(leases, nil))
	press(m, "j", "j") // the cursor on the third row
	sel, _ := m.selected()
	gone := rowKeyAt(m, 0)
	c.Advance(m.cfg.Tick)
	m.onTick()
	l, _ := m.state.Lease(gone)
	apply(m, eventBatch(data.Event{ID: 1, Kind: data.KindReleased, Key: gone, RunID: l.RunID, Fence: l.Fence, At: server}))
	c.Advance(m.cfg.Tick)
	m.onTick() // applies the release; the rows are not sorted again yet
	if m.now.Sub(m.builtAt) >= m.rebuildEvery() {
		t.Fatalf("the rows were sorted again %v ago: the test needs a tick between two sorts", m.now.Sub(m.builtAt))
	}
	if len(m.rows) != len(leases)-1 || rowKeyAt(m, 0) == gone || strings.Contains(screen(m), gone.Session+" dev") {
		t.Errorf("%d rows, first %v, want %d without the released %v:\n%s", len(m.rows), rowKeyAt(m, 0), len(leases)-1, gone, screen(m))
	}
	if now, _ := m.selected(); now.Key != sel.Key {
		t.Errorf("selected %v after the release, want %v still", now.Key, sel.Key)
	}
	apply(m, syncBatch(leases[:5], nil))
	if len(m.rows) != 5 || rowKeyAt(m, 0) != leases[0].Key {
		t.Errorf("after a resync of 5 leases: %d rows, first %v; want 5, %v first", len(m.rows), rowKeyAt(m, 0), leases[0].Key)
	}
}

// TestFilterKeysNarrowTheRows types a filter one key at a time, in mixed
// case, and erases it: each key that only adds to the filter narrows the
// rows in place (refilterRows), and every step must list exactly what a new
// listing with the filter does, in the same order.
func TestFilterKeysNarrowTheRows(t *testing.T) {
	t.Parallel()
	m, _ := newModel(t, 120, 30)
	apply(m, syncBatch(fleet(300), nil))
	press(m, "s", "s", "s") // the holder order
	press(m, "/")
	check := func(step string) {
		t.Helper()
		want := m.state.Rows(nil, monitor.RowQuery{Order: m.sortBy.order(), Filter: m.filter})
		if len(m.rows) != len(want) {
			t.Fatalf("%s: filter %q shows %d rows, a new listing %d", step, m.filter, len(m.rows), len(want))
		}
		for i := range want {
			if m.rows[i] != want[i] {
				t.Fatalf("%s: filter %q row %d differs from a new listing", step, m.filter, i)
			}
		}
	}
	for _, k := range []string{"S", "-", "0", "0", "1"} {
		press(m, k)
		check("typed " + k)
	}
	for range 5 {
		press(m, "backspace")
		check("erased")
	}
}
