package ui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// deviceRow is one device's cells, before they are fitted to columns.
type deviceRow struct {
	device, pid, state, belief, sent string
	stateTone, beliefTone, sentTone  tone
	runs, refused, writes            string
}

// deviceCells renders the text of every device at serverNow, beside the
// server's leases.
func (m *Model) deviceCells(list []monitor.Device, serverNow time.Time) []deviceRow {
	shown := m.shown()
	byHolder := map[string][]data.Lease{}
	for _, d := range list {
		byHolder[d.Holder] = nil
	}
	shown.Range(func(l data.Lease) bool {
		if hs, ok := byHolder[l.Holder]; ok && l.Holder != "" {
			byHolder[l.Holder] = append(hs, l)
		}
		return true
	})
	rows := make([]deviceRow, len(list))
	for i := range list {
		d := &list[i]
		state, st := stateText(d, serverNow)
		sent, sentTone := sentText(d)
		b := believes(d, shown.Lease, byHolder[d.Holder], serverNow, m.cfg.Devices.Silent)
		rows[i] = deviceRow{
			device: clean(d.Account, 20) + " " + clean(d.Name, 16), pid: fmt.Sprint(d.PID),
			state: state, stateTone: st, belief: b.text, beliefTone: b.tone, sent: sent, sentTone: sentTone,
			runs: fmt.Sprint(d.Runs), refused: fmt.Sprint(d.Refusals),
			writes: fmt.Sprintf("%d/%d", d.WritesAccepted, d.WritesRefused),
		}
	}
	return rows
}

// deviceHeader is the pane's column titles.
var deviceHeader = deviceRow{device: "DEVICE", pid: "PID", state: "STATE", belief: "BELIEVES · SERVER SAYS", sent: "LAST SENT",
	runs: "RUNS", refused: "REF", writes: "WRITES"}

// maxStateWidth caps the state column: a holding device's state fits
// ("holding chat-2 run 76777879 fence 47 (preempted desktop pid 4101)", a
// refusal with its time left, a queue place with its holder);
// the belief, where a mismatch shows, takes the rest.
const maxStateWidth = 68

// minStateWidth is what the state column keeps when the belief needs the
// room: the state and its session.
const minStateWidth = 30

// deviceCols are the pane's column widths (0: hidden).
type deviceCols struct{ device, pid, state, belief, sent, runs, refused, writes int }

// minSentWidth is the width from which the devices pane shows the last
// message each device sent ("steer chat-1 → acked by 1a2b3c4d (carried)").
const minSentWidth = 170

// deviceColumns fits the pane into width cells: device, pid and the
// counters as wide as their widest value; then the belief (where a mismatch
// shows) as wide as its widest value as long as the state keeps
// minStateWidth, the state up to maxStateWidth, and what is left to the
// belief. Below 130 cells the counters go.
func deviceColumns(width int, rows []deviceRow) deviceCols {
	var c deviceCols
	stateW, beliefW := 0, 0
	for _, r := range append([]deviceRow{deviceHeader}, rows...) {
		c.device = max(c.device, ansi.StringWidth(r.device))
		c.pid = max(c.pid, len(r.pid))
		stateW = max(stateW, ansi.StringWidth(r.state))
		beliefW = max(beliefW, ansi.StringWidth(r.belief))
		c.runs, c.refused, c.writes = max(c.runs, len(r.runs)), max(c.refused, len(r.refused)), max(c.writes, len(r.writes))
		c.sent = max(c.sent, ansi.StringWidth(r.sent))
	}
	rest := width - 2 - c.device - 1 - c.pid - 1 - 1 // marker, device, pid, the gap between state and belief
	if width >= 130 {
		rest -= c.runs + c.refused + c.writes + 3
	} else {
		c.runs, c.refused, c.writes = 0, 0, 0
	}
	if width >= minSentWidth && len(rows) > 0 {
		rest -= c.sent + 1
	} else {
		c.sent = 0
	}
	stateW = min(stateW, maxStateWidth)
	c.belief = max(min(beliefW, rest-min(stateW, minStateWidth)), 0)
	c.state = max(min(stateW, rest-c.belief), 0)
	c.belief = max(rest-c.state, 0)
	return c
}

// viewDevices is the devices pane: a title, the column header and one row
// per device.
func (m *Model) viewDevices(lay layout) []string {
	s := m.styles
	list := m.devices()
	title := "DEVICES what each device believes · what the server says"
	if m.focus == focusDevices {
		title = "▶ DEVICES (focused: ↑/↓ select, enter attempts, tab next, " + m.keys.Devices.Help().Key + " hides)"
	} else {
		title = "─ " + title
	}
	if len(list) > lay.deviceRows {
		title += fmt.Sprintf("  %d-%d/%d", m.dev.off+1, min(m.dev.off+lay.deviceRows, len(list)), len(list))
	}
	title = s.paneTitle.Render(title)
	if m.dev.err != nil && len(list) > 0 { // the rows are the last read that worked
		title += " " + s.bad.Render("stale: cannot read the devices: "+clean(oneLine(m.dev.err.Error()), 60))
	}
	rule := strings.Repeat("─", max(m.width-ansi.StringWidth(title)-1, 0))
	lines := []string{title + " " + s.dim.Render(rule)}
	switch {
	case m.dev.err != nil && len(list) == 0:
		return append(lines, "", "  "+s.bad.Render("cannot read the devices: "+clean(oneLine(m.dev.err.Error()), 0)))
	case len(list) == 0 && !m.dev.read:
		return append(lines, "", "  "+s.dim.Render("reading the devices…"))
	case len(list) == 0 && m.filter != "" && len(m.allDevices()) > 0:
		return append(lines, "", "  "+s.dim.Render(fmt.Sprintf("no device matches %q (%s clears the filter)", clean(m.filter, 20), m.keys.Back.Help().Key)))
	case len(list) == 0:
		return append(lines, "", "  "+s.dim.Render("no device has reported"))
	}
	end := min(m.dev.off+lay.deviceRows, len(list))
	rows := m.deviceCells(list[m.dev.off:end], m.shown().ServerNow(m.shownNow()))
	c := deviceColumns(m.width, rows)
	lines = append(lines, s.bold.Render("  "+deviceLine(c, deviceHeader, nil)))
	for i, r := range rows {
		selected := m.dev.off+i == m.dev.cur
		if selected && m.focus == focusDevices {
			lines = append(lines, s.selected.Render(pad("▶ "+deviceLine(c, r, nil), m.width)))
			continue
		}
		lines = append(lines, "  "+deviceLine(c, r, m.toneStyle)) // the cursor shows only when the pane has the focus
	}
	return lines
}

// deviceLine lays out a row's cells in c; style colours a cell by its tone
// (nil: plain).
func deviceLine(c deviceCols, r deviceRow, style func(tone, string) string) string {
	if style == nil {
		style = func(_ tone, s string) string { return s }
	}
	cells := []string{pad(r.device, c.device), padLeft(r.pid, c.pid), style(r.stateTone, pad(r.state, c.state)), style(r.beliefTone, pad(r.belief, c.belief))}
	if c.sent > 0 {
		cells = append(cells, style(r.sentTone, pad(r.sent, c.sent)))
	}
	if c.runs > 0 {
		cells = append(cells, padLeft(r.runs, c.runs), padLeft(r.refused, c.refused), padLeft(r.writes, c.writes))
	}
	return strings.Join(cells, " ")
}

// toneStyle renders s in tone's style.
func (m *Model) toneStyle(t tone, s string) string {
	switch t {
	case toneDim:
		return m.styles.dim.Render(s)
	case toneOK:
		return m.styles.ok.Render(s)
	case toneWarn:
		return m.styles.warn.Render(s)
	case toneBad:
		return m.styles.bad.Render(s)
	}
	return s
}

// viewDevice is one device in full: its state, what it believes beside
// what the server says, its counters, and its recent attempts with the
// server's answers.
func (m *Model) viewDevice() []string {
	s, dd := m.styles, m.dev.detail
	lines := []string{s.title.Render("Device") + " " + clean(dd.id.name, 24) + " of " + clean(dd.id.account, 24) +
		s.dim.Render("   ("+m.keys.Back.Help().Key+" back)"), ""}
	field := m.fieldLines(&lines)
	d, ok := m.detailDevice()
	if !ok {
		lines = append(lines, "  "+s.warn.Render("no report from this device now"))
	} else {
		serverNow := m.shown().ServerNow(m.shownNow())
		r := m.deviceCells([]monitor.Device{d}, serverNow)[0]
		field("process", r.device+" pid "+r.pid)
		field("holder", clean(d.Holder, 0))
		since := ""
		if d.State != monitor.DeviceFrozen && d.State != monitor.DeviceKilled && d.State != monitor.DeviceWaiting { // they say for how long
			since = s.dim.Render("  for " + compact(serverNow.Sub(d.Since)))
		}
		field("state", m.toneStyle(r.stateTone, r.state)+since)
		field("believes", m.toneStyle(r.beliefTone, r.belief))
		for _, b := range d.Believes {
			field("", fmt.Sprintf("%s run %s fence %d, granted %s ago", keyText(monitor.Key{Key: b.Key}, 0), shortRun(b.Run), b.Fence, compact(serverNow.Sub(b.Since))))
		}
		if d.Attachment != "" {
			field("stream", clean(d.Attachment, 0))
		}
		if sent, st := sentText(&d); sent != "" {
			field("last sent", m.toneStyle(st, sent)+s.dim.Render(fmt.Sprintf("  message %d, sent to %s's run", d.Sent.ID, ownerText(d.Sent.To))))
		}
		field("counters", fmt.Sprintf("%d runs, %d refusals, %d writes accepted, %d refused by the fence check",
			d.Runs, d.Refusals, d.WritesAccepted, d.WritesRefused))
		if busy := busyText(d); busy != "" {
			field("", busy)
		}
		field("reported", compact(serverNow.Sub(d.Reported))+" ago")
	}
	empty := "no attempts yet"
	if m.cfg.Devices.AttemptsFunc == nil {
		empty = "this monitor has no attempts to show"
	}
	return m.appendList(lines, listView{title: "Attempts", note: " newest first, with the server's answers",
		loading: dd.loading, err: dd.err, what: "the attempts", empty: empty,
		n: len(dd.attempts), scroll: dd.scroll, line: func(i int) string { return m.attemptLine(dd.attempts[i]) }})
}

// attemptLine is one attempt: when, which process, what it asked, about
// which session and run, and the answer.
func (m *Model) attemptLine(a monitor.Attempt) string {
	session := ""
	if a.Key != (data.Key{}) {
		session = keyText(monitor.Key{Key: a.Key}, 24)
	}
	what := a.At.In(m.cfg.Location).Format("15:04:05.000") + fmt.Sprintf(" pid %-7d ", a.PID) + pad(clean(a.Action, 8), 8) + " " + pad(session, m.keyWidth())
	if a.Run != uuid.Nil {
		what += fmt.Sprintf(" run %s", shortRun(a.Run))
		if a.Fence != 0 {
			what += fmt.Sprintf(" fence %d", a.Fence)
		}
	}
	answer := "→ " + clean(a.Answer, 0)
	if !a.OK {
		answer = m.styles.warn.Render(answer)
	}
	return "  " + what + "  " + answer
}
