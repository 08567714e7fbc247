package ui

import (
	"slices"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/leasetop/leasetop/monitor"
)

// devicePane is the devices pane's state (see monitor.DeviceSource).
type devicePane struct {
	on     bool             // shown
	list   []monitor.Device // the latest read, in the source's order
	frozen []monitor.Device // the list on screen while paused
	read   bool             // a read has come back
	err    error            // the latest read's error
	sel    deviceID         // the selected device
	cur    int
	off    int
	detail *deviceDetail
}

// deviceID names a device across its processes.
type deviceID struct{ account, name string }

func idOf(d monitor.Device) deviceID { return deviceID{d.Account, d.Name} }

// deviceDetail is the open detail view of one device.
type deviceDetail struct {
	id       deviceID
	attempts []monitor.Attempt
	err      error
	loading  bool
	scroll   int
}

// Messages of the devices pane.
type (
	devicesMsg struct {
		list []monitor.Device
		err  error
	}
	attemptsMsg struct {
		id       deviceID
		attempts []monitor.Attempt
		err      error
	}
)

// hasDevices reports whether the embedding program gave a devices pane.
func (m *Model) hasDevices() bool { return m.cfg.Devices.ListFunc != nil }

// allDevices is the latest read, or the paused copy while paused.
func (m *Model) allDevices() []monitor.Device {
	if m.frozen != nil {
		return m.dev.frozen
	}
	return m.dev.list
}

// devices is the list on screen: the paused copy while paused, with the
// devices the filter keeps.
func (m *Model) devices() []monitor.Device {
	list := m.allDevices()
	if m.filter == "" {
		return list
	}
	var out []monitor.Device
	for _, d := range list {
		if deviceMatches(d, m.filter) {
			out = append(out, d)
		}
	}
	return out
}

// readDevices reads the devices after wait (none: at once).
func (m *Model) readDevices(wait time.Duration) tea.Cmd {
	list := m.cfg.Devices.ListFunc
	if list == nil {
		return nil
	}
	read := func(time.Time) tea.Msg {
		l, err := list()
		return devicesMsg{list: l, err: err}
	}
	if wait <= 0 {
		return func() tea.Msg { return read(time.Time{}) }
	}
	return tea.Tick(wait, read)
}

// loadAttempts reads d's attempts for its detail view.
func (m *Model) loadAttempts(d monitor.Device) tea.Cmd {
	attempts := m.cfg.Devices.AttemptsFunc
	if attempts == nil {
		return nil
	}
	return func() tea.Msg {
		a, err := attempts(d)
		return attemptsMsg{id: idOf(d), attempts: a, err: err}
	}
}

// onDevices takes a read of the devices and schedules the next one (with
// the open detail view's attempts).
func (m *Model) onDevices(msg devicesMsg) tea.Cmd {
	m.dev.read, m.dev.err = true, msg.err
	if msg.err == nil {
		m.dev.list = msg.list
		if m.frozen == nil {
			m.reselectDevice()
		}
	}
	next := m.readDevices(m.cfg.Devices.Every)
	if d, ok := m.detailDevice(); ok && m.mode == modeDevice {
		return tea.Batch(next, m.loadAttempts(d))
	}
	return next
}

func (m *Model) onAttempts(msg attemptsMsg) tea.Cmd {
	if m.dev.detail == nil || m.dev.detail.id != msg.id {
		return nil
	}
	m.dev.detail.loading = false
	m.dev.detail.err = msg.err
	if msg.err == nil {
		m.dev.detail.attempts = msg.attempts
	}
	return nil
}

// toggleDevices shows or hides the pane; a hidden pane gives up the focus.
func (m *Model) toggleDevices() {
	m.dev.on = !m.dev.on
	if !m.dev.on && m.focus == focusDevices {
		m.focus = focusTable
	}
	m.clampTable()
	m.clampEvents()
	m.clampDevices()
	if m.dev.on {
		m.setStatus(statusInfo, "devices pane shown ("+m.keys.Devices.Help().Key+" hides it)")
	} else {
		m.setStatus(statusInfo, "devices pane hidden ("+m.keys.Devices.Help().Key+" shows it)")
	}
}

// nextFocus moves the focus to the next pane on screen: sessions, devices,
// events.
func (m *Model) nextFocus() {
	lay := m.layout()
	order := []focusArea{focusTable}
	if lay.showDevices {
		order = append(order, focusDevices)
	}
	if lay.showEvents {
		order = append(order, focusEvents)
	}
	i := slices.Index(order, m.focus)
	m.focus = order[(i+1)%len(order)]
	m.reselectEvent()
}

// deviceCursor is the devices pane's cursor over list, the devices it
// shows.
func (m *Model) deviceCursor(list []monitor.Device) cursor {
	return newCursor(&m.dev.cur, &m.dev.off, len(list), m.layout().deviceRows)
}

// reselectDevice keeps the cursor on the selected device wherever it now
// is in the list (the viewport scrolls only to keep it in view, where the
// table's moves with the row).
func (m *Model) reselectDevice() {
	list := m.devices()
	c := m.deviceCursor(list)
	if len(list) == 0 {
		c.reset()
		return
	}
	if i := slices.IndexFunc(list, func(d monitor.Device) bool { return idOf(d) == m.dev.sel }); i >= 0 {
		m.dev.cur = i
	}
	c.move(0)
	m.dev.sel = idOf(list[m.dev.cur])
}

func (m *Model) moveDevices(delta int) {
	list := m.devices()
	if len(list) == 0 {
		return
	}
	m.deviceCursor(list).move(delta)
	m.dev.sel = idOf(list[m.dev.cur])
}

func (m *Model) clampDevices() { m.deviceCursor(m.devices()).keepVisible() }

// selectedDevice returns the device under the pane's cursor.
func (m *Model) selectedDevice() (monitor.Device, bool) {
	list := m.devices()
	if m.dev.cur < len(list) {
		return list[m.dev.cur], true
	}
	return monitor.Device{}, false
}

// detailDevice returns the device the detail view shows, as last read.
func (m *Model) detailDevice() (monitor.Device, bool) {
	if m.dev.detail == nil {
		return monitor.Device{}, false
	}
	for _, d := range m.devices() {
		if idOf(d) == m.dev.detail.id {
			return d, true
		}
	}
	return monitor.Device{}, false
}

// openDevice opens the selected device's detail view and loads its
// attempts.
func (m *Model) openDevice() tea.Cmd {
	d, ok := m.selectedDevice()
	if !ok {
		return nil
	}
	m.dev.detail = &deviceDetail{id: idOf(d), loading: m.cfg.Devices.AttemptsFunc != nil}
	m.mode = modeDevice
	return m.loadAttempts(d)
}

// deviceKey scrolls the attempts or closes the view.
func (m *Model) deviceKey(msg tea.KeyPressMsg) tea.Cmd {
	k, d := &m.keys, m.dev.detail
	switch {
	case key.Matches(msg, k.Quit):
		return tea.Quit
	case key.Matches(msg, k.Back, k.Detail):
		m.mode, m.dev.detail = modeMain, nil
	case key.Matches(msg, k.Up):
		d.scroll = max(d.scroll-1, 0)
	case key.Matches(msg, k.Down):
		d.scroll = min(d.scroll+1, max(len(d.attempts)-1, 0))
	case key.Matches(msg, k.Top):
		d.scroll = 0
	case key.Matches(msg, k.Help):
		m.dev.detail = nil
		m.openHelp()
	default:
		return m.otherKey(msg)
	}
	return nil
}
