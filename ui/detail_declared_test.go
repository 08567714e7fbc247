package ui

import (
	"strings"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// TestDetailShowsWhatTheHolderDeclared: the detail view shows every field
// (README: "every field in full"), preemptible and the attachment among
// them, and shows them right after a grant too: the grant's
// event carries neither, so they read "not read yet" until the feed's
// periodic read of the renewed leases brings the row, and never the
// previous holder's or a default.
func TestDetailShowsWhatTheHolderDeclared(t *testing.T) {
	t.Parallel()
	m, clock := newModel(t, 160, 40)
	paying := mkLease("acme", "chat-1", "phone", run(2), 5, 10*time.Second, time.Second, 15*time.Second)
	paying.NotPreemptible, paying.Attachment = true, "stream-phone"
	apply(m, syncBatch([]data.Lease{paying}, nil))
	press(m, "enter")
	detail := screen(m)
	for _, want := range []string{"preemptible no: the holder declared it must not be preempted", "attachment  stream-phone"} {
		if !strings.Contains(detail, want) {
			t.Errorf("detail view lacks %q:\n%s", want, detail)
		}
	}

	// Handed over to a preemptible run with its own stream: until its row
	// is read, the view says it does not know.
	ev := handedOverEvent(301, "phone")
	ev.Key = paying.Key
	apply(m, monitor.Batch{Items: []monitor.Item{{Event: &ev, At: base}}, Conn: data.ListenerState{Status: data.ListenerLive}})
	detail = screen(m)
	if strings.Contains(detail, "stream-phone") || strings.Contains(detail, "must not be preempted") || !strings.Contains(detail, "preemptible not read yet") {
		t.Errorf("after the hand-over the detail view shows the old holder's declarations, or no \"not read yet\":\n%s", detail)
	}
	row := data.Lease{Key: paying.Key, RunID: ev.RunID, Holder: ev.Holder, Fence: ev.Fence, AcquiredAt: ev.At, RenewedAt: ev.At,
		ExpiresAt: ev.ExpiresAt, Attachment: "stream-desk"}
	clock.Advance(time.Second)
	delta := readBatch(clock.Now())
	delta.Items[0].Delta.Leases = []data.Lease{row}
	apply(m, delta)
	detail = screen(m)
	for _, want := range []string{"preemptible yes", "attachment  stream-desk"} {
		if !strings.Contains(detail, want) {
			t.Errorf("after the row's read the detail view lacks %q:\n%s", want, detail)
		}
	}
}
