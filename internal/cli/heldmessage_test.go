package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/data"
	"github.com/leasetop/leasetop/lease"
)

// heldCases are refusals in every shape heldMessage words, with the line
// leasetop prints for each.
func heldCases() []struct {
	name string
	h    *lease.HeldError
	want string
} {
	key := data.Key{Account: "acme", Session: "chat-1"}
	run := uuid.MustParse("0131020a-0000-8000-8000-000000000001")
	asker := uuid.MustParse("05437c9e-0000-8000-8000-000000000002")
	ask := &data.PendingAsk{RunID: asker, Holder: "phone", Remaining: 2345 * time.Millisecond}
	return []struct {
		name string
		h    *lease.HeldError
		want string
	}{
		{"held", &lease.HeldError{Key: key, RunID: run, Holder: "desktop", Remaining: 4321 * time.Millisecond, Preemptible: true},
			`lease acme/chat-1 is held by run 0131020a-0000-8000-8000-000000000001 ("desktop") for 4.3s more`},
		{"everything", &lease.HeldError{Key: key, RunID: run, Holder: "checkout", Remaining: time.Second, Attachment: "pay-1", Queued: 2, Ask: ask},
			`lease acme/chat-1 is held by run 0131020a-0000-8000-8000-000000000001 ("checkout") for 1s more, not preemptible, attachment "pay-1" (queued: 2 ahead); ` +
				`run 05437c9e-0000-8000-8000-000000000002 ("phone") has asked it to hand over (2.3s left)`},
		{"free, queued", &lease.HeldError{Key: key, Queued: 3},
			`lease acme/chat-1 is free but reserved for its queue (queued: 3 ahead)`},
		{"gone", &lease.HeldError{Key: key},
			`lease acme/chat-1 is held by another run`},
		{"gone, asked", &lease.HeldError{Key: key, Ask: ask},
			`lease acme/chat-1 is held by another run; run 05437c9e-0000-8000-8000-000000000002 ("phone") has asked it to hand over (2.3s left)`},
	}
}

// TestHeldMessageWording: the CLI's one line for every shape of refusal.
func TestHeldMessageWording(t *testing.T) {
	for _, tc := range heldCases() {
		if got := heldMessage(tc.h); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

// TestHeldMessageIsTheLibrarysText: the CLI's line and HeldError.Error are
// one text (one formatter): they differ only where the CLI makes database
// text inert.
func TestHeldMessageIsTheLibrarysText(t *testing.T) {
	for _, tc := range heldCases() {
		if got := tc.h.Error(); got != tc.want {
			t.Errorf("%s: HeldError.Error()\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
	h := heldCases()[1].h
	h.Holder, h.Attachment, h.Ask.Holder = "desk\x1b[2Jtop", "pay\u202e1", "ph\none"
	got := heldMessage(h)
	for _, raw := range []string{"\x1b", "\u202e", "\n"} {
		if strings.Contains(got, raw) {
			t.Errorf("heldMessage let %q through: %q", raw, got)
		}
	}
}
