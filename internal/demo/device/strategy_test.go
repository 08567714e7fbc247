package device

import (
	"encoding/json"
	"testing"

	"github.com/leasetop/leasetop/lease"
)

// TestMixSpellsStrategiesAsTheLibrary: the demo's --strategy takes the busy
// strategies as lease.OnBusy and leasetop run's --on-busy spell them
// (refuse, not try), and a device's report carries the same word.
func TestMixSpellsStrategiesAsTheLibrary(t *testing.T) {
	t.Parallel()
	const all = "refuse,wait,preempt,join,queue,ask,steer"
	m, err := ParseMix(all)
	if err != nil {
		t.Fatalf("ParseMix(%q): %v", all, err)
	}
	if got := m.String(); got != all || m.Name() != "all" {
		t.Errorf("ParseMix(%q) = %q (name %q), want every strategy, named all", all, got, m.Name())
	}
	if got := ClassicMix().String(); got != "refuse,wait" {
		t.Errorf("ClassicMix() = %q, want refuse,wait", got)
	}
	if _, err := ParseMix("try"); err == nil {
		t.Error(`ParseMix("try") = nil error, want the refusal: the strategy is called refuse`)
	}
	if m, err := ParseMix("steer,queue"); err != nil || !m.Has(lease.BusySteer) {
		t.Errorf(`ParseMix("steer,queue") = %v, %v; want a mix with steer: the devices steer`, m, err)
	}
	js, err := json.Marshal(Report{Kind: ReportAskEnded, Strategy: lease.BusyQueue})
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js, &back); err != nil || back.Strategy != lease.BusyQueue {
		t.Errorf("report %s read back as %v, %v; want queue", js, back.Strategy, err)
	}
}
