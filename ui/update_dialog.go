package ui

import (
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// dialog is the forced-release confirmation: it names the lease exactly as
// it was shown, and confirming releases only if that run still holds it.
// With clear set it confirms clearing a session's queue instead
// (ui/queue_clear.go).
type dialog struct {
	lease   data.Lease
	clear   *queueClear
	reason  textinput.Model
	editing bool // the reason field has focus
	// typed, in a protected context (Context.Protected), is the field the
	// session id must be typed in to confirm; (y/N) otherwise.
	typed *textinput.Model
}

// cancelled is the status line of a dialog closed without confirming.
func (d *dialog) cancelled() string {
	if d.clear != nil {
		return "clearing the queue cancelled"
	}
	return "force release cancelled"
}

// openDialog asks to force-release the selected session.
func (m *Model) openDialog() tea.Cmd {
	var (
		l  data.Lease
		ok bool
	)
	if m.focus == focusEvents {
		if ev, evOK := m.selectedEvent(); evOK {
			l, ok = m.shown().Lease(ev.Key)
		}
	} else {
		l, ok = m.selected()
	}
	if !ok {
		m.setStatus(statusWarn, "nothing to release: select a held session first")
		return nil
	}
	return m.openDialogFor(l)
}

func (m *Model) openDialogFor(l data.Lease) tea.Cmd {
	if !m.keys.Release.Enabled() { // read-only: never reachable, and never opened
		return nil
	}
	if m.refusedIn(l.Context, "forced release") {
		return nil
	}
	m.dialog = &dialog{lease: l, reason: m.reasonInput()}
	m.mode = modeConfirm
	return m.protect(l.Context)
}

// refusedIn says so, and reports true, when the context named name is
// read-only: what (a forced release, clearing a queue) is refused there,
// whatever the other contexts allow.
func (m *Model) refusedIn(name, what string) bool {
	c, ok := m.contextOf(name)
	if !ok || !c.ReadOnly {
		return false
	}
	m.setStatus(statusWarn, readOnlyError(clean(name, 0), what).Error())
	return true
}

// protect makes the dialog just opened ask for the session id to be typed,
// in a protected context; it returns the field's focus.
func (m *Model) protect(name string) tea.Cmd {
	if c, ok := m.contextOf(name); !ok || !c.Protected {
		return nil
	}
	in := textinput.New()
	in.Prompt = ""
	in.Placeholder = "the session id, as shown above"
	in.CharLimit = data.MaxIDBytes
	in.SetWidth(max(m.dialogInnerWidth()-12, 8))
	in.SetStyles(textinput.DefaultStyles(true))
	m.dialog.typed = &in
	return m.dialog.typed.Focus()
}

// session is the session id a protected dialog wants typed.
func (d *dialog) session() string {
	if d.clear != nil {
		return d.clear.key.Session
	}
	return d.lease.Session
}

// reasonInput is a dialog's reason field.
func (m *Model) reasonInput() textinput.Model {
	in := textinput.New()
	in.Prompt = ""
	in.Placeholder = "optional, recorded with the event"
	in.CharLimit = data.MaxReasonBytes / 4 // up to 4 bytes a character: always within the bound
	in.SetWidth(max(m.dialogInnerWidth()-12, 8))
	in.SetStyles(textinput.DefaultStyles(true))
	return in
}

// dialogKey: y confirms; n, esc and enter cancel (No is the default); tab
// edits the reason, and enter or tab leaves the reason field.
func (m *Model) dialogKey(msg tea.KeyPressMsg) tea.Cmd {
	d, k := m.dialog, &m.keys
	if d.editing {
		switch {
		case m.typingQuit(msg):
			return tea.Quit
		case msg.String() == "esc":
			m.closeDialog(d.cancelled())
		case msg.String() == "enter", msg.String() == "tab":
			d.editing = false
			d.reason.Blur()
			if d.typed != nil {
				return d.typed.Focus()
			}
		default:
			var cmd tea.Cmd
			d.reason, cmd = d.reason.Update(msg)
			return cmd
		}
		return nil
	}
	if d.typed != nil {
		return m.typedKey(msg)
	}
	switch {
	case key.Matches(msg, k.Confirm) && d.clear != nil:
		return m.confirmClear()
	case key.Matches(msg, k.Confirm):
		return m.confirmRelease()
	case key.Matches(msg, k.Cancel):
		m.closeDialog(d.cancelled())
	case key.Matches(msg, k.Focus):
		d.editing = true
		return d.reason.Focus()
	case m.typingQuit(msg):
		return tea.Quit
	}
	return nil
}

// typedKey is a protected dialog's key (the reason field aside): the keys
// type the session id; enter confirms if it is typed exactly, esc cancels,
// tab edits the reason. y is a letter like the others (loupe #32's "type
// the name to confirm").
func (m *Model) typedKey(msg tea.KeyPressMsg) tea.Cmd {
	d := m.dialog
	switch {
	case m.typingQuit(msg):
		return tea.Quit
	case msg.String() == "esc":
		m.closeDialog(d.cancelled())
	case msg.String() == "enter" && d.typed.Value() != d.session():
		m.setStatus(statusWarn, "protected context: type the session id exactly as shown to confirm (esc cancels)")
	case msg.String() == "enter" && d.clear != nil:
		return m.confirmClear()
	case msg.String() == "enter":
		return m.confirmRelease()
	case key.Matches(msg, m.keys.Focus):
		d.typed.Blur()
		d.editing = true
		return d.reason.Focus()
	default:
		var cmd tea.Cmd
		*d.typed, cmd = d.typed.Update(msg)
		return cmd
	}
	return nil
}

// confirmRelease sends the release of the run that was shown.
func (m *Model) confirmRelease() tea.Cmd {
	l := m.dialog.lease
	reason := strings.TrimSpace(m.dialog.reason.Value())
	if err := data.ValidateReason(reason); err != nil {
		m.setStatus(statusError, "cannot release: "+err.Error())
		return nil
	}
	req := releaseReq{key: monitor.KeyOf(l), run: l.RunID, holder: l.Holder, reason: reason}
	m.inflight = &req
	m.dialog, m.mode = nil, modeMain
	m.setStatus(statusInfo, "releasing "+keyText(monitor.KeyOf(l), 24)+" (run "+shortRun(l.RunID)+")…")
	return m.release(req)
}

func (m *Model) closeDialog(status string) {
	m.dialog, m.mode = nil, modeMain
	m.setStatus(statusInfo, status)
}

// dialogInnerWidth is the dialog's text width.
func (m *Model) dialogInnerWidth() int {
	return max(min(m.width-6, 64), 20)
}
