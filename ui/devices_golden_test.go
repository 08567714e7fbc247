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
