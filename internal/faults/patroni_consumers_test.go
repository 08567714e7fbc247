package faults_test

import (
	"bufio"
	"encoding/json"
	"strings"
	"time"

	"github.com/leasetop/leasetop/internal/data"
)

// shownBeyond is what one consumer showed that the new primary does not
// hold: events the old primary recorded and the failover lost, by kind.
type shownBeyond map[data.Kind]int

func (s shownBeyond) total() int {
	n := 0
	for _, v := range s {
		n += v
	}
	return n
}

// onlyReleases reports whether every such event is a release (the one
// transition the library commits without waiting for its flush).
func (s shownBeyond) onlyReleases() bool { return s.total() == s[data.KindReleased] }

// checkAcrossFailover is check for a failover that may have lost events:
// each consumer applied every event the new primary holds exactly once,
// and whatever else it showed is an event of the old primary (an id below
// firstNew, the new primary's first) shown once. It returns, per
// consumer, what it showed beyond the new primary's history (the events
// pane: how many).
func (cs *consumers) checkAcrossFailover(firstNew int64) (follower shownBeyond, screen int64, exporter shownBeyond) {
	t := cs.r.t
	t.Helper()
	evs := cs.r.events()
	inDB := map[int64]bool{}
	for _, ev := range evs {
		inDB[ev.ID] = true
	}

	follower = shownBeyond{}
	counts := map[int64]int{}
	sc := bufio.NewScanner(strings.NewReader(cs.follower.Stdout.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev struct {
			ID   int64     `json:"id"`
			Kind data.Kind `json:"kind"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		counts[ev.ID]++
		if !inDB[ev.ID] {
			follower[ev.Kind]++
			if ev.ID >= firstNew {
				t.Errorf("events --follow printed event %d (%s), which the new primary does not hold, with an id of the new primary's", ev.ID, ev.Kind)
			}
		}
	}
	for id, n := range counts {
		if n != 1 {
			t.Errorf("events --follow printed event %d %d times, want once", id, n)
		}
	}
	for _, ev := range evs {
		if counts[ev.ID] != 1 {
			t.Errorf("events --follow printed the new primary's event %d %d times, want once", ev.ID, counts[ev.ID])
		}
	}

	cs.screen.mu.Lock()
	for _, ev := range evs {
		if !cs.screen.shown[ev.ID] {
			t.Errorf("the monitor's events pane never showed event %d", ev.ID)
		}
	}
	if len(cs.screen.twice) > 0 {
		t.Errorf("the monitor's events pane held events %v twice", cs.screen.twice)
	}
	if screen = cs.screen.applied - int64(len(evs)); screen < 0 || cs.screen.baseline != 0 {
		t.Errorf("the monitor applied %d events after %d, want the %d the new primary holds and maybe lost ones", cs.screen.applied, cs.screen.baseline, len(evs))
	}
	cs.screen.mu.Unlock()

	exporter = shownBeyond{}
	want := cs.r.eventKinds()
	got := cs.exporter.transitions(t)
	for k, n := range want {
		if got[k] < n {
			t.Errorf("leasetop_transitions_total{kind=%q} = %d, want at least the new primary's %d", k, got[k], n)
		}
	}
	for k, n := range got {
		if n > want[k] {
			exporter[data.Kind(k)] = int(n - want[k])
		}
	}
	return follower, screen, exporter
}

// caughtUpExplained is caughtUp; when a consumer does not catch up it says
// first where the monitor's program stands (its feed's link, what it
// applied), which caughtUp's message leaves out.
func (cs *consumers) caughtUpExplained(since time.Time) (follower, screen, exporter time.Duration) {
	t := cs.r.t
	t.Helper()
	ids := cs.r.eventIDs(0)
	deadline := time.Now().Add(60 * time.Second)
	for !cs.screen.shownAll(ids) {
		if time.Now().After(deadline) {
			cs.screen.mu.Lock()
			missing := 0
			for _, id := range ids {
				if !cs.screen.shown[id] {
					missing++
				}
			}
			t.Errorf("after 60s the monitor's program has not shown %d of the %d events: link %v, applied %d after %d, %d ids shown",
				missing, len(ids), cs.screen.link, cs.screen.applied, cs.screen.baseline, len(cs.screen.shown))
			cs.screen.mu.Unlock()
			break
		}
		time.Sleep(10 * time.Millisecond) // polling the consumer until the deadline
	}
	return cs.caughtUp(since)
}
