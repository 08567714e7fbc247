// Package keymap holds the monitor's key bindings: the defaults, the help
// text for each, overrides from a TOML file, and read-only mode.
//
// Bindings are plain bubbles key.Binding values in a Map built by Default;
// nothing in this package has behaviour beyond naming keys. The monitor
// matches messages against them with key.Matches, and generates its help
// screen from Groups, so the help always lists exactly the keys in force.
package keymap

import (
	"slices"

	"charm.land/bubbles/v2/key"
)

// Map is every key binding of the monitor.
type Map struct {
	// Navigation.
	Up, Down, Top, Bottom, PageUp, PageDown key.Binding
	// View.
	Filter, Back, Sort, Pause, Focus, Detail, Resync, Help, Quit key.Binding
	// Devices shows or hides the devices pane, which only a monitor given
	// devices (the demo's) has.
	Devices key.Binding
	// Accounts opens the accounts view: each limited account's slots used,
	// queued tickets and saturation, fullest first.
	Accounts key.Binding
	// Timeline opens the timeline view (lanes of ownership over time); the
	// others act inside it: move its cursor through time (a step, ten steps,
	// to the next or previous event) and zoom.
	Timeline, Earlier, Later, EarlierMore, LaterMore, PrevEvent, NextEvent, ZoomIn, ZoomOut key.Binding
	// Actions that change the database; disabled by SetReadOnly: force-release
	// the selected lease, clear the selected session's queue.
	Release, ClearQueue key.Binding
	// The (y/N) confirmation dialog.
	Confirm, Cancel key.Binding
}

// Group is a titled list of bindings, in the order the help screen shows
// them.
type Group struct {
	Title    string
	Bindings []key.Binding
}

// Default returns the default bindings: vi-style and arrow navigation, / to
// filter, space or p to pause, x or ctrl+d to force-release (k9s habit), C
// to clear a queue, ? for help, q or ctrl+c to quit.
func Default() Map {
	b := func(keys []string, help, desc string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(help, desc))
	}
	return Map{
		Up:       b([]string{"up", "k"}, "↑/k", "move up"),
		Down:     b([]string{"down", "j"}, "↓/j", "move down"),
		Top:      b([]string{"g", "home"}, "g/home", "go to the first row"),
		Bottom:   b([]string{"G", "end"}, "G/end", "go to the last row"),
		PageUp:   b([]string{"pgup"}, "pgup", "page up"),
		PageDown: b([]string{"pgdown"}, "pgdown", "page down"),

		Filter: b([]string{"/"}, "/", "filter every pane by account, session, holder or run"),
		Back:   b([]string{"esc"}, "esc", "clear the filter; close a view"),
		Sort:   b([]string{"s"}, "s", "cycle sort: TTL left, account, held for, holder"),
		Pause:  b([]string{"space", "p"}, "space/p", "pause the screen (data keeps flowing)"),
		Focus:  b([]string{"tab"}, "tab", "move the focus to the next pane"),
		Detail: b([]string{"enter"}, "enter", "details and history of the session"),
		Resync: b([]string{"r"}, "r", "resync now: re-read every lease and missed event"),
		Help:   b([]string{"?"}, "?", "show or hide this help"),
		Quit:   b([]string{"q", "ctrl+c"}, "q", "quit"),

		Devices: b([]string{"d"}, "d", "show or hide the devices pane (what each device believes)"),

		Accounts: b([]string{"a"}, "a", "accounts: each limit's slots used, queued and saturation, fullest first"),

		Timeline:    b([]string{"t"}, "t", "timeline: who held each session over time"),
		Earlier:     b([]string{"left", "h"}, "←/h", "move the cursor back a step (scrub the past)"),
		Later:       b([]string{"right", "l"}, "→/l", "move the cursor forward a step"),
		EarlierMore: b([]string{"[", "shift+left"}, "[", "back ten steps (also shift+←)"),
		LaterMore:   b([]string{"]", "shift+right"}, "]", "forward ten steps (also shift+→)"),
		PrevEvent:   b([]string{"N", "<"}, "N/<", "jump to the previous event"),
		NextEvent:   b([]string{"n", ">"}, "n/>", "jump to the next event"),
		ZoomIn:      b([]string{"+", "="}, "+/=", "zoom in (down to 10 seconds)"),
		ZoomOut:     b([]string{"-", "_"}, "-/_", "zoom out (up to 12 hours); esc goes live, then back"),

		Release:    b([]string{"x", "ctrl+d"}, "x/ctrl+d", "force-release the selected lease (asks y/N)"),
		ClearQueue: b([]string{"C"}, "C", "clear the selected session's queue (asks y/N)"),

		Confirm: b([]string{"y", "Y"}, "y", "confirm"),
		Cancel:  b([]string{"n", "N", "esc", "enter"}, "N/esc", "cancel (the default)"),
	}
}

// action is a Map field with its name in the config file.
type action struct {
	name        string
	group       string
	binding     *key.Binding
	destructive bool
}

// Group titles.
const (
	groupNavigation = "Navigation"
	groupView       = "View"
	groupTimeline   = "Timeline"
	groupActions    = "Actions"
	groupDialog     = "Confirmation dialog"
)

// actions lists every binding with its config name, in help order.
func (m *Map) actions() []action {
	return []action{
		{"up", groupNavigation, &m.Up, false},
		{"down", groupNavigation, &m.Down, false},
		{"top", groupNavigation, &m.Top, false},
		{"bottom", groupNavigation, &m.Bottom, false},
		{"page_up", groupNavigation, &m.PageUp, false},
		{"page_down", groupNavigation, &m.PageDown, false},
		{"filter", groupView, &m.Filter, false},
		{"back", groupView, &m.Back, false},
		{"sort", groupView, &m.Sort, false},
		{"pause", groupView, &m.Pause, false},
		{"focus", groupView, &m.Focus, false},
		{"detail", groupView, &m.Detail, false},
		{"resync", groupView, &m.Resync, false},
		{"help", groupView, &m.Help, false},
		{"quit", groupView, &m.Quit, false},
		{"devices", groupView, &m.Devices, false},
		{"accounts", groupView, &m.Accounts, false},
		{"release", groupActions, &m.Release, true},
		{"clear_queue", groupActions, &m.ClearQueue, true},
		{"confirm", groupDialog, &m.Confirm, false},
		{"cancel", groupDialog, &m.Cancel, false},
		{"timeline", groupTimeline, &m.Timeline, false},
		{"earlier", groupTimeline, &m.Earlier, false},
		{"later", groupTimeline, &m.Later, false},
		{"earlier_more", groupTimeline, &m.EarlierMore, false},
		{"later_more", groupTimeline, &m.LaterMore, false},
		{"prev_event", groupTimeline, &m.PrevEvent, false},
		{"next_event", groupTimeline, &m.NextEvent, false},
		{"zoom_in", groupTimeline, &m.ZoomIn, false},
		{"zoom_out", groupTimeline, &m.ZoomOut, false},
	}
}

// Names returns the config-file names of the actions, in help order.
func Names() []string {
	var m Map
	var names []string
	for _, a := range m.actions() {
		names = append(names, a.name)
	}
	return names
}

// Groups returns the bindings grouped for the help screen, disabled ones
// included (key.Binding.Enabled reports which), except those in omit
// (pointers to m's fields): the keys of what a monitor does not have, such
// as &m.Devices without a devices pane.
func (m *Map) Groups(omit ...*key.Binding) []Group {
	var groups []Group
	for _, a := range m.actions() {
		if slices.Contains(omit, a.binding) {
			continue
		}
		if len(groups) == 0 || groups[len(groups)-1].Title != a.group {
			groups = append(groups, Group{Title: a.group})
		}
		g := &groups[len(groups)-1]
		g.Bindings = append(g.Bindings, *a.binding)
	}
	return groups
}

// SetReadOnly disables every binding that changes the database. It is the
// one place read-only mode is enforced in the keys: a disabled binding never
// matches, and the help screen shows it as unavailable.
func (m *Map) SetReadOnly() {
	for _, a := range m.actions() {
		if a.destructive {
			a.binding.SetEnabled(false)
		}
	}
}

// Disabled returns the disabled binding that keystroke would have
// triggered, so the monitor can say why nothing happened (read-only mode).
func (m *Map) Disabled(keystroke string) (key.Binding, bool) {
	for _, a := range m.actions() {
		if a.binding.Enabled() {
			continue
		}
		for _, k := range a.binding.Keys() {
			if k == keystroke {
				return *a.binding, true
			}
		}
	}
	return key.Binding{}, false
}

// Bound returns the name of the main-screen action keystroke is bound to,
// so an embedding program can refuse extra keys that would shadow one.
func (m *Map) Bound(keystroke string) (string, bool) {
	for _, a := range m.actions() {
		if a.group == groupDialog {
			continue
		}
		for _, k := range a.binding.Keys() {
			if k == keystroke {
				return a.name, true
			}
		}
	}
	return "", false
}
