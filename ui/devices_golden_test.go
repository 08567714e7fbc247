package ui

import "testing"

// Golden views of the devices pane (the demo's): holding, refused, a frozen
// zombie whose belief the server contradicts, a killed device whose lease
// the server still gives it. Regenerate with go test ./ui -run
// TestGoldenDevices -update, after reading the diff.
func TestGoldenDevices(t *testing.T) {
	tests := []struct {
		name  string
		w, h  int
		setup func(m *Model)
	}{
		{"pane_150x40", 150, 40, func(m *Model) {}},
		{"pane_120x35", 120, 35, func(m *Model) {}},
		{"pane_80x24", 80, 24, func(m *Model) {}},
		{"focused", 120, 35, func(m *Model) { press(m, "tab", "j") }},
		{"detail", 120, 35, func(m *Model) {
			press(m, "tab", "j", "enter")
			m.Update(attemptsMsg{id: m.dev.detail.id, attempts: fixtureAttempts()})
		}},
		{"hidden", 120, 35, func(m *Model) { press(m, "d") }},
		{"help", 120, 40, func(m *Model) { press(m, "?") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := newModel(t, tt.w, tt.h, withDevices)
			loadDevices(m)
			tt.setup(m)
			requireGolden(t, m, tt.w, tt.h)
		})
	}
}

// TestGoldenBusyDevices: the devices pane with the busy strategies, one
// row per new state: preempted (by whom), following another device's run
// (its stream), holding after a preempt, queued (place 1 and 2, one after
// a paying run refused its preempt), holding a paying run, preempting,
// refused by a paying run, asking to hand over, handed over; and a
// preempted device's detail with its busy counters. Regenerate with -update, after reading the diff.
func TestGoldenBusyDevices(t *testing.T) {
	tests := []struct {
		name  string
		w, h  int
		setup func(m *Model)
	}{
		{"busy_150x40", 150, 40, func(m *Model) {}},
		{"busy_120x35", 120, 35, func(m *Model) {}},
		{"busy_80x24", 80, 24, func(m *Model) {}},
		{"busy_detail", 150, 40, func(m *Model) {
			press(m, "tab", "enter")
			m.Update(attemptsMsg{id: m.dev.detail.id, attempts: busyAttempts()})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := newModel(t, tt.w, tt.h, withBusyDevices)
			loadBusyDevices(m)
			tt.setup(m)
			requireGolden(t, m, tt.w, tt.h)
		})
	}
}
